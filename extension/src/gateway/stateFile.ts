// The gateway's state file, written by whichever thread runs the gateway (the extension host's
// gateway runs in a worker thread: gatewayWorker.ts): whole or not at all, readable by the user
// alone, and flushed to the disk when a request carrying a new condensation waits on it.
import * as fs from "node:fs";
import * as path from "node:path";

/** Writes `text` to `file` whole or not at all, readable by the user alone. */
export function writePrivate(file: string, text: string, durable = false): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(temporary, "w", 0o600);
  try {
    fs.writeFileSync(fd, text);
    // Flushed before the rename, and the rename with its folder: a crash right after this leaves
    // the new file whole or the old one, never an empty one.
    if (durable) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
  if (durable) {
    const dir = fs.openSync(path.dirname(file), "r");
    try {
      fs.fsyncSync(dir);
    } finally {
      fs.closeSync(dir);
    }
  }
}
