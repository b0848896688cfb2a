// package.json's `contributes.configuration` describes settings whose ranges and defaults the core
// owns: it must say what the real core (the wasm package the extension ships) says.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { PHASES } from "@context-condenser/protocol";
import { PROFILE_KEYS, RESTRICTED_SETTINGS, SECTION } from "../src/settings/settings";
import { GATEWAY_SETTINGS } from "../src/gateway/gatewayCommands";
import { meta, newTestEngine } from "./core";

interface Property {
  default?: unknown;
  minimum?: number;
  maximum?: number;
  enum?: unknown[];
  description?: string;
  items?: { properties?: Record<string, Property> };
}

const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "package.json"), "utf8")) as {
  contributes: { configuration: { properties: Record<string, Property> } };
  capabilities: { untrustedWorkspaces: { supported: string; description: string; restrictedConfigurations: string[] } };
};
const properties = manifest.contributes.configuration.properties;

function setting(name: string): Property {
  const p = properties[name];
  if (!p) throw new Error(`package.json describes no setting ${name}`);
  return p;
}

/** package.json's `what` of `name` is the core's value. */
function agrees(name: string, what: string, inPackage: unknown, inCore: unknown): void {
  expect(inPackage, `${name} ${what}: package.json says ${JSON.stringify(inPackage)}, the core says ${JSON.stringify(inCore)}`).toEqual(inCore);
}

describe("package.json agrees with the core", () => {
  const { limits, kinds } = meta;

  it("on the global threshold's range and default", () => {
    const name = "contextCondenser.autoCondense.thresholdPercent";
    const p = setting(name);
    agrees(name, "minimum", p.minimum, limits.threshold_min);
    agrees(name, "maximum", p.maximum, limits.threshold_max);
    agrees(name, "default", p.default, limits.default_threshold_percent);
  });

  it("on the minimum gain's default", () => {
    const name = "contextCondenser.autoCondense.minGainPercent";
    agrees(name, "default", setting(name).default, limits.default_min_gain_percent);
  });

  it("on the default provider and the providers there are", () => {
    const name = "contextCondenser.defaultProvider";
    const p = setting(name);
    agrees(name, "default", p.default, limits.default_provider);
    const ids = newTestEngine()
      .listProviders()
      .map((info) => info.id);
    if (p.enum) agrees(name, "enum", [...p.enum].sort(), [...ids].sort());
  });

  it("on a profile's kinds and its own threshold", () => {
    const name = "contextCondenser.profiles";
    const fields = setting(name).items?.properties ?? {};
    const kind = fields["kind"];
    if (kind?.enum) agrees(`${name}[].kind`, "enum", kind.enum, kinds.map((k) => k.kind));
    const threshold = fields["threshold_percent"];
    if (threshold) {
      const where = `${name}[].threshold_percent`;
      // -1: the global threshold; else the core's range.
      agrees(where, "minimum", threshold.minimum, -1);
      agrees(where, "maximum", threshold.maximum, limits.threshold_max);
      if (threshold.default !== undefined) agrees(where, "default", threshold.default, -1);
      const range = threshold.description?.match(/\((\d+) to (\d+)\)/);
      if (range) agrees(where, "range in its description", [Number(range[1]), Number(range[2])], [limits.threshold_min, limits.threshold_max]);
    }
  });

  it("on a profile's fields and its generation settings' ranges, which the extension checks", () => {
    const name = "contextCondenser.profiles";
    const fields = setting(name).items?.properties ?? {};
    agrees(name, "fields", Object.keys(fields).sort(), [...PROFILE_KEYS].sort());
    for (const phase of PHASES) {
      const params = (fields[phase] as Property & { properties?: Record<string, Property> }).properties ?? {};
      agrees(`${name}[].${phase}.temperature`, "range", [params.temperature?.minimum, params.temperature?.maximum], [
        limits.temperature_min,
        limits.temperature_max,
      ]);
      agrees(`${name}[].${phase}.max_output_tokens`, "minimum", params.max_output_tokens?.minimum, 1);
    }
  });
});

describe("package.json agrees with the extension", () => {
  it("on the settings a workspace not trusted may not set: the ones the extension reads from the user's settings only", () => {
    const untrusted = manifest.capabilities.untrustedWorkspaces;
    expect(untrusted.supported).toBe("limited");
    expect([...untrusted.restrictedConfigurations].sort()).toEqual(RESTRICTED_SETTINGS.map((k) => `${SECTION}.${k}`).sort());
    // Where keys go and which programs run: each of these must stay restricted.
    for (const key of ["profiles", "chatProfile", "condensingProfile", "toolsFile"]) {
      expect(untrusted.restrictedConfigurations).toContain(`${SECTION}.${key}`);
      expect(properties[`${SECTION}.${key}`], `${key} is a setting`).toBeDefined();
    }
  });
});

describe("the gateway's settings", () => {
  it("are the ones the extension follows: a change of any restarts a running gateway but terminals, which is applied alone", () => {
    const described = Object.keys(properties)
      .filter((k) => k.startsWith(`${SECTION}.gateway.`))
      .map((k) => k.slice(`${SECTION}.gateway.`.length))
      .sort();
    expect(described).toEqual([...GATEWAY_SETTINGS].sort());
  });
});
