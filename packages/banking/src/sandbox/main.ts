import { SANDBOX_PLAID } from '../feeds/config';
import { startSandboxAggregator } from './server';

/**
 * `npm run sandbox:aggregator`: the sandbox aggregator on SANDBOX_AGGREGATOR_PORT (default 4010), accepting the
 * PLAID_CLIENT_ID and PLAID_SECRET the API is configured with (defaults match the API's development defaults).
 */
const port = Number(process.env.SANDBOX_AGGREGATOR_PORT ?? 4010);
const sandbox = await startSandboxAggregator(
  {
    clientId: process.env.PLAID_CLIENT_ID ?? SANDBOX_PLAID.clientId,
    secret: process.env.PLAID_SECRET ?? SANDBOX_PLAID.secret,
    ...(process.env.SANDBOX_START_DATE ? { start: process.env.SANDBOX_START_DATE } : {}),
  },
  port,
  process.env.SANDBOX_AGGREGATOR_HOST ?? '127.0.0.1',
);
console.log(`sandbox aggregator (Plaid wire protocol) listening on ${sandbox.url}`);
const stop = () => void sandbox.close().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
