import { openDatabase } from '@firm/db';
import { buildApp } from './app';
import { testConfig } from './config';

/** The OpenAPI document as `/api/openapi.json` serves it, without a server or a real database (for generators). */
export async function openapiDocument(): Promise<Record<string, unknown>> {
  const database = openDatabase({ dataDir: 'memory://' });
  const app = await buildApp({ config: testConfig({ LOG_LEVEL: 'silent' }), database });
  try {
    await app.ready();
    return app.swagger() as unknown as Record<string, unknown>;
  } finally {
    await app.close();
    await database.close();
  }
}
