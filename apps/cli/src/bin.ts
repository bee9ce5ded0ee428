import { DEVELOPMENT_TOKEN_KEYS, PlaidAggregator, parseTokenKeys } from '@firm/banking';
import { openDatabase } from '@firm/db';
import { runCli } from './main';

const database = openDatabase({
  url: process.env.DATABASE_URL || undefined,
  dataDir: process.env.DATA_DIR || undefined,
});
try {
  const env = process.env;
  const tokenKeys = env.BANK_TOKEN_KEYS || (env.NODE_ENV === 'production' ? null : DEVELOPMENT_TOKEN_KEYS);
  process.exitCode = await runCli(
    process.argv.slice(2),
    database,
    {
      out: (t) => process.stdout.write(`${t}\n`),
      err: (t) => process.stderr.write(`${t}\n`),
    },
    tokenKeys
      ? {
          aggregator: new PlaidAggregator({
            clientId: env.PLAID_CLIENT_ID || 'sandbox-client-id',
            secret: env.PLAID_SECRET || 'sandbox-secret',
            basePath: env.PLAID_BASE_URL || 'http://127.0.0.1:4010',
          }),
          tokenKeys: parseTokenKeys(tokenKeys),
        }
      : undefined,
  );
} finally {
  await database.close();
}
