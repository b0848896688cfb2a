// Runs inside code-server's extension host (extensionTestsPath): a mocha run of the API-level
// suite; its failure count becomes the exit code the runner receives.
const path = require("node:path");
const Mocha = require("mocha");

exports.run = function run() {
  const mocha = new Mocha({ ui: "bdd", timeout: 60_000, color: false });
  mocha.addFile(path.join(__dirname, "extension.test.js"));
  return new Promise((resolve, reject) => {
    mocha.run((failures) => (failures > 0 ? reject(new Error(`${failures} test(s) failed`)) : resolve()));
  });
};
