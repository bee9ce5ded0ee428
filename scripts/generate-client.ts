// Regenerates packages/client/src/schema.ts (the API's types, by openapi-typescript) from the OpenAPI document.
// `npm run client:generate` after changing a route's schema; a test fails while the file is out of date.
import { writeFile } from 'node:fs/promises';
import { clientSchemaSource, CLIENT_SCHEMA_FILE } from './client-schema';

await writeFile(CLIENT_SCHEMA_FILE, await clientSchemaSource());
process.stdout.write(`wrote ${CLIENT_SCHEMA_FILE}\n`);
