// What the tests run against: a real `primer serve` that e2e's
// TestTypeScriptSDK starts (go test ./e2e -run TestTypeScriptSDK), which
// passes its address, its admin key, a Docker template and model
// stand-ins in the environment.

import { Primer } from "@primer/sdk";

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run these tests through go test ./e2e -run TestTypeScriptSDK, which starts primer serve`);
  return v;
}

/** url and adminKey reach the platform under test. */
export const url = need("PRIMER_URL");
export const adminKey = need("PRIMER_TOKEN");
/** dockerTemplate is a container template on Docker. */
export const dockerTemplate = need("PRIMER_TEST_DOCKER_TEMPLATE");
/** localTemplate is the default template on the local provider. */
export const localTemplate = "default";
/** templates are the templates each workspace test runs on. */
export const templates: [string, string][] = [["local", localTemplate], ["docker", dockerTemplate]];

/** admin is a client with the first admin key. */
export function admin(): Primer {
  return new Primer({ url, token: adminKey });
}

/** unique is a fresh id with prefix. */
export function unique(prefix: string): string {
  return `${prefix}-${Math.random().toString(16).slice(2, 10)}`;
}
