import { randomUUID } from 'node:crypto';
import { receiptPdf } from '@firm/attachments/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let base: string;
let other: Awaited<ReturnType<typeof createOtherFirm>>;
beforeAll(async () => {
  t = await createTestApp();
  base = `/agent/v1/acct/clients/${t.orgId}`;
  other = await createOtherFirm(t.database.db, 'attachable-other');
});
afterAll(() => t.close());

const send = (method: 'GET' | 'POST', url: string, payload?: object, headers: Record<string, string> = t.auth) =>
  t.app.inject({
    method,
    url,
    headers: { ...headers, ...(method === 'POST' ? { 'idempotency-key': randomUUID() } : {}) },
    ...(payload ? { payload } : {}),
  });

async function upload(headers: Record<string, string>, fileName: string, text: string) {
  const pdf = await receiptPdf(text, 5_000);
  const res = await send(
    'POST',
    '/api/v1/attachments/inline',
    { fileName, contentBase64: pdf.toString('base64') },
    headers,
  );
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().data.id as string, size: pdf.length };
}

async function vendor(name: string) {
  const res = await send('POST', `${base}/entities/Vendor`, { DisplayName: `${name} ${randomUUID().slice(0, 6)}` });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data.Id as string;
}

describe('the gateway Attachable entity', () => {
  it('is in the coverage, read and create under the entities scopes', async () => {
    const res = await send('GET', '/agent/v1/acct/coverage');
    const entry = res.json().data.find((e: { entity: string }) => e.entity === 'Attachable');
    expect(entry).toMatchObject({
      operations: ['read', 'create'],
      scopes: { read: 'acct:entities:read', create: 'acct:entities:write' },
    });
  });

  it('attaches a received file to a vendor and reads it back in QuickBooks shape', async () => {
    const file = await upload(t.orgHeaders, 'receipt.pdf', 'Receipt: paper, $12.00');
    const vendorId = await vendor('Paper');
    const created = await send('POST', `${base}/entities/Attachable`, {
      Id: file.id,
      AttachableRef: [{ EntityRef: { type: 'Vendor', value: vendorId }, IncludeOnSend: false }],
    });
    expect(created.statusCode, created.body).toBe(201);
    const expected = {
      Id: file.id,
      SyncToken: '1',
      FileName: 'receipt.pdf',
      ContentType: 'application/pdf',
      Size: file.size,
      AttachableRef: [{ EntityRef: { type: 'Vendor', value: vendorId }, IncludeOnSend: false }],
      MetaData: { CreateTime: expect.any(String), LastUpdatedTime: expect.any(String) },
    };
    expect(created.json().data).toMatchObject(expected);
    const read = await send('GET', `${base}/entities/Attachable/${file.id}`);
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json().data).toMatchObject(expected);
    // Only fields QuickBooks' own Attachable has (its read of one, as recorded from the sandbox).
    const qboFields = ['Id', 'SyncToken', 'FileName', 'FileAccessUri', 'TempDownloadUri', 'Size', 'ContentType']
      .concat(['Note', 'domain', 'sparse', 'MetaData', 'AttachableRef'])
      .sort();
    expect(Object.keys(read.json().data).filter((k) => !qboFields.includes(k))).toEqual([]);
    const list = await send('GET', `${base}/entities/Attachable?maxResults=100`);
    expect(list.statusCode, list.body).toBe(200);
    expect(JSON.stringify(list.json())).toContain(file.id);
  });

  it('refuses an unknown entity type, a missing file, a missing record and another firm’s file', async () => {
    const file = await upload(t.orgHeaders, 'statement.pdf', 'Statement: March');
    const vendorId = await vendor('Bank');
    const unknown = await send('POST', `${base}/entities/Attachable`, {
      Id: file.id,
      AttachableRef: [{ EntityRef: { type: 'Payroll', value: vendorId } }],
    });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.code).toBe('VALIDATION_ERROR');
    const noRef = await send('POST', `${base}/entities/Attachable`, { Id: file.id });
    expect(noRef.statusCode).toBe(400);
    const noFile = await send('POST', `${base}/entities/Attachable`, {
      AttachableRef: [{ EntityRef: { type: 'Vendor', value: vendorId } }],
    });
    expect(noFile.statusCode).toBe(400);
    expect(noFile.json().error.details[0].field).toBe('payload.Id');
    const missingFile = await send('POST', `${base}/entities/Attachable`, {
      Id: randomUUID(),
      AttachableRef: [{ EntityRef: { type: 'Vendor', value: vendorId } }],
    });
    expect(missingFile.statusCode).toBe(404);
    const missingRecord = await send('POST', `${base}/entities/Attachable`, {
      Id: file.id,
      AttachableRef: [{ EntityRef: { type: 'Invoice', value: randomUUID() } }],
    });
    expect(missingRecord.statusCode).toBe(404);
    const foreign = await upload(
      { authorization: other.authorization, 'x-organization-id': other.orgId },
      'theirs.pdf',
      'Their receipt',
    );
    const linkForeign = await send('POST', `${base}/entities/Attachable`, {
      Id: foreign.id,
      AttachableRef: [{ EntityRef: { type: 'Vendor', value: vendorId } }],
    });
    expect(linkForeign.statusCode).toBe(404);
    expect(linkForeign.json().error.code).toBe('RECORD_NOT_FOUND');
    const readForeign = await send('GET', `${base}/entities/Attachable/${foreign.id}`);
    expect(readForeign.statusCode).toBe(404);
    const bad = await send('GET', `${base}/entities/Attachable/not-an-id`);
    expect(bad.statusCode).toBe(404);
  });
});
