// Validates an OpenAPI document with @seriousme/openapi-schema-validator
// (the OpenAPI Initiative's JSON Schemas for each version, checked with
// ajv), then resolves every $ref, which throws on one that leads nowhere.
// Usage: node validate.mjs FILE. Run by api/openapi/validator_test.go.
import { Validator } from "@seriousme/openapi-schema-validator";

const file = process.argv[2];
const validator = new Validator();
const res = await validator.validate(file);
if (!res.valid) {
  console.error(JSON.stringify(res.errors, null, 2));
  process.exit(1);
}
validator.resolveRefs();
console.log(`valid: OpenAPI ${validator.version}`);
