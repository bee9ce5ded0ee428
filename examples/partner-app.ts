// A small partner app on the typed client (@firm/client): lists the firm's companies, adds an expense account,
// posts a purchase with an Idempotency-Key (and retries it, which replays the receipt), and reads the trial balance.
//
//   npm start                      # in one terminal: the quick-start server with its demo key
//   npx tsx examples/partner-app.ts
//
// BASE_URL (default http://127.0.0.1:3000) and API_KEY (default: the demo key in .data/demo-credentials.json).
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createFirmClient } from '@firm/client';

const baseUrl = process.env.BASE_URL ?? 'http://127.0.0.1:3000';
const token =
  process.env.API_KEY ??
  (JSON.parse(readFileSync(new URL('../.data/demo-credentials.json', import.meta.url), 'utf8')) as { apiKey: string })
    .apiKey;
const client = createFirmClient({ baseUrl, token });

function fail(step: string, error: unknown): never {
  process.stderr.write(`${step} failed: ${JSON.stringify(error)}\n`);
  process.exit(1);
}

const companies = await client.GET('/api/v1/companies');
if (!companies.data) fail('listing companies', companies.error);
const company = companies.data.data[0];
if (!company) fail('finding a company', 'the firm has none');
process.stdout.write(`company: ${company.name}\n`);
const companyId = company.id;

const chart = await client.GET('/api/v1/companies/{companyId}/accounts', {
  params: { path: { companyId }, query: { limit: 1000 } },
});
if (!chart.data) fail('reading the chart', chart.error);
const code = (c: string) => chart.data.data.find((a) => a.code === c)?.id;
const checking = code('1000');
if (!checking) fail('finding the checking account', 'no account 1000');

let training = code('6950');
if (!training) {
  const created = await client.POST('/api/v1/accounts', {
    params: { header: { 'x-organization-id': companyId } },
    body: { code: '6950', name: 'Training', type: 'expense' },
  });
  if (!created.data) fail('adding the account', created.error);
  training = created.data.data.id;
}
process.stdout.write(`account: 6950 Training ${training}\n`);

const idempotencyKey = randomUUID();
// Today: the demo's books are closed through the last fiscal year end, so an older date could be refused.
const today = new Date().toISOString().slice(0, 10);
const purchase = {
  params: { path: { companyId }, header: { 'idempotency-key': idempotencyKey } },
  body: {
    date: today,
    sourceAccountId: checking,
    amountCents: 45_000,
    categoryAccountId: training,
    description: 'Bookkeeping course',
  },
};
const posted = await client.POST('/api/v1/companies/{companyId}/purchases', purchase);
if (!posted.data) fail('posting the purchase', posted.error);
const retried = await client.POST('/api/v1/companies/{companyId}/purchases', purchase);
if (!retried.data) fail('retrying the purchase', retried.error);
process.stdout.write(
  `posted: entry ${posted.data.journalEntryId}; retry replayed: ${retried.response.headers.get('idempotent-replayed')}\n`,
);

const balance = await client.GET('/api/v1/companies/{companyId}/reports/trial-balance', {
  params: { path: { companyId }, query: { endDate: today } },
});
if (!balance.data) fail('reading the trial balance', balance.error);
const row = balance.data.data.rows.find((r) => r.accountId === training);
process.stdout.write(`trial balance: Training debit ${row?.debitCents ?? 0} cents\n`);
