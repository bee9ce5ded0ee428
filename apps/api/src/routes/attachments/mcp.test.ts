import { createHash, randomUUID } from 'node:crypto';
import { executableBytes, receiptPdf } from '@firm/attachments/testing';
import { insertBankTransaction } from '@firm/banking';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let rpcId = 0;

interface ToolAnswer {
  isError?: boolean;
  structuredContent?: {
    data: { id: string; sha256: string; downloadUrl?: string; links: { entityId: string }[] }[] | { id: string };
  };
  content: { text: string }[];
}
async function tool(name: string, args: object): Promise<ToolAnswer> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      authorization: `Bearer ${t.demo.apiKey}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    },
    payload: { jsonrpc: '2.0', id: ++rpcId, method: 'tools/call', params: { name, arguments: args } },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().result as ToolAnswer;
}

describe('attachments through MCP', () => {
  it('attaches a statement given as base64, lists it on its record, and serves the same bytes', async () => {
    const contact = await t.app.inject({
      method: 'POST',
      url: '/api/v1/contacts',
      headers: t.orgHeaders,
      payload: { kind: 'vendor', name: `Bank ${randomUUID().slice(0, 6)}` },
    });
    const vendorId = contact.json().data.id as string;
    const statement = await receiptPdf('Statement: March 2026, closing balance $12,345.67', 20_000);
    const attached = await tool('attach_file', {
      clientId: t.orgId,
      idempotencyKey: randomUUID(),
      body: {
        fileName: 'statement-2026-03.pdf',
        contentBase64: statement.toString('base64'),
        entityType: 'contact',
        entityId: vendorId,
      },
    });
    expect(attached.isError, attached.content[0]?.text).toBeFalsy();
    const id = (attached.structuredContent?.data as { id: string }).id;
    const listed = await tool('list_attachments', { clientId: t.orgId, entityType: 'contact', entityId: vendorId });
    const rows = listed.structuredContent?.data as { id: string; sha256: string }[];
    expect(rows.map((r) => [r.id, r.sha256])).toEqual([[id, sha(statement)]]);
    const got = await t.app.inject({ method: 'GET', url: `/api/v1/attachments/${id}/content`, headers: t.orgHeaders });
    expect(sha(got.rawPayload)).toBe(sha(statement));
    // A link a person can open: on the host the agent reached, working without a credential.
    const link = new URL((listed.structuredContent?.data as { downloadUrl?: string }[])[0]?.downloadUrl ?? '');
    expect(link.origin).toBe('http://localhost');
    const viaLink = await t.app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });
    expect(viaLink.statusCode).toBe(200);
    expect(sha(viaLink.rawPayload)).toBe(sha(statement));
  });

  it('cites an attached receipt when categorizing a bank row through bank_reclassify', async () => {
    const account = await t.app.inject({
      method: 'POST',
      url: '/api/v1/bank-accounts',
      headers: t.orgHeaders,
      payload: { accountId: t.account('1000') },
    });
    expect(account.statusCode, account.body).toBe(201);
    const row = await t.database.db.transaction((tx) =>
      insertBankTransaction(tx, { firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } }, t.orgId, {
        bankAccountId: account.json().data.id,
        date: '2026-02-03',
        amountCents: -1_999,
        description: 'STAPLES',
        counterparty: null,
        sourceType: 'aggregator_bank_feed',
        externalId: randomUUID(),
      }),
    );
    const receipt = await receiptPdf('Receipt: Staples $19.99', 4_000);
    const attached = await tool('attach_file', {
      clientId: t.orgId,
      idempotencyKey: randomUUID(),
      body: { fileName: 'staples.pdf', contentBase64: receipt.toString('base64') },
    });
    const attachmentId = (attached.structuredContent?.data as { id: string }).id;
    const categorized = await tool('bank_reclassify', {
      clientId: t.orgId,
      id: row,
      idempotencyKey: randomUUID(),
      body: { accountId: t.account('6100'), reason: 'office supplies', attachmentIds: [attachmentId] },
    });
    expect(categorized.isError, categorized.content[0]?.text).toBeFalsy();
    const data = categorized.structuredContent?.data as unknown as { attachments: { id: string }[] };
    expect(data.attachments.map((a) => a.id)).toEqual([attachmentId]);
    const listed = await tool('list_attachments', { clientId: t.orgId, entityType: 'bank_transaction', entityId: row });
    expect((listed.structuredContent?.data as { id: string }[]).map((a) => a.id)).toEqual([attachmentId]);
  });

  it('refuses an executable and a file over the cap', async () => {
    const exe = await tool('attach_file', {
      clientId: t.orgId,
      body: { fileName: 'statement.pdf', contentBase64: executableBytes().toString('base64') },
    });
    expect(exe.isError).toBe(true);
    expect(JSON.parse(exe.content[0]?.text ?? '{}').error.code).toBe('UNSUPPORTED_FILE_TYPE');
    const big = await tool('attach_file', {
      clientId: t.orgId,
      body: { fileName: 'big.pdf', contentBase64: Buffer.alloc(5 * 1024 * 1024 + 10).toString('base64') },
    });
    expect(big.isError).toBe(true);
    expect(JSON.parse(big.content[0]?.text ?? '{}').error.code, big.content[0]?.text).toBe('VALIDATION_ERROR');
  });
});
