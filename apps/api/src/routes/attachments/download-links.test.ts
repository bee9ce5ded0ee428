import { createHash, randomUUID } from 'node:crypto';
import { signedDownload } from '@firm/attachments';
import { receiptPdf } from '@firm/attachments/testing';
import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggedUrl } from '../../app';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let t: TestApp;
let other: Awaited<ReturnType<typeof createOtherFirm>>;
let otherHeaders: Record<string, string>;
beforeAll(async () => {
  t = await createTestApp({ config: { PUBLIC_ORIGIN: 'https://books.example.com' } });
  other = await createOtherFirm(t.database.db, 'download-other');
  otherHeaders = { authorization: other.authorization, 'x-organization-id': other.orgId };
});
afterAll(() => t.close());

async function upload(headers: Record<string, string>, fileName: string, text: string) {
  const pdf = await receiptPdf(text, 8_000);
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/attachments/inline',
    headers,
    payload: { fileName, contentBase64: pdf.toString('base64') },
  });
  expect(res.statusCode, res.body).toBe(201);
  return { id: res.json().data.id as string, pdf };
}

/** The attachment as read, with its download link. */
async function read(headers: Record<string, string>, id: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/attachments/${id}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as { downloadUrl: string; downloadUrlExpiresAt: string };
}

/** A link's path and query, fetched without any credential. */
const fetchLink = (url: string) => {
  const u = new URL(url);
  return t.app.inject({ method: 'GET', url: `${u.pathname}${u.search}` });
};

const refused = (res: { statusCode: number; json(): unknown }, status: number, code: string) => {
  expect(res.statusCode).toBe(status);
  const body = res.json() as { error: { code: string; message: string; requestId: string } };
  expect(body.error).toMatchObject({ code, message: expect.any(String), requestId: expect.any(String) });
};

describe('attachment download links', () => {
  it('reads carry a link on the public origin that downloads the same bytes without a credential, audited', async () => {
    const { id, pdf } = await upload(t.orgHeaders, 'Quittung März.pdf', 'Receipt: coffee $4.20');
    const before = Date.now();
    const a = await read(t.orgHeaders, id);
    const url = new URL(a.downloadUrl);
    expect(url.origin).toBe('https://books.example.com');
    expect(url.pathname).toBe(`/api/v1/companies/${t.orgId}/attachments/${id}/download`);
    const expiresAt = Date.parse(a.downloadUrlExpiresAt);
    expect(expiresAt - before).toBeGreaterThan(14 * 60_000);
    expect(expiresAt - before).toBeLessThanOrEqual(15 * 60_000 + 1000);
    expect(Number(url.searchParams.get('expires')) * 1000).toBe(expiresAt);
    // The list carries it too.
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/attachments', headers: t.orgHeaders });
    expect(list.json().data.find((x: { id: string }) => x.id === id).downloadUrl).toMatch(/signature=/);

    const got = await fetchLink(a.downloadUrl);
    expect(got.statusCode, got.body).toBe(200);
    expect(sha(got.rawPayload)).toBe(sha(pdf));
    expect(got.headers['content-type']).toBe('application/pdf');
    expect(got.headers['content-length']).toBe(String(pdf.length));
    expect(got.headers['x-content-type-options']).toBe('nosniff');
    expect(got.headers['cache-control']).toBe('private, no-store');
    expect(got.headers['content-disposition']).toBe(
      `attachment; filename="Quittung M_rz.pdf"; filename*=UTF-8''Quittung%20M%C3%A4rz.pdf`,
    );
    const audit = rowsOf<{ action: string; actor_kind: string; data: { via?: string } }>(
      await t.database.db.execute(sql`select action, actor_kind, data from audit_events
        where organization_id = ${t.orgId} and resource_id = ${id} order by created_at`),
    );
    expect(audit.map((r) => [r.action, r.actor_kind, r.data.via ?? null])).toEqual([
      ['attachment.created', 'api_key', null],
      ['attachment.downloaded', 'download_link', 'download_link'],
    ]);
  });

  it('refuses an altered signature or expiry, and the link used for another attachment: 403', async () => {
    const { id } = await upload(t.orgHeaders, 'a.pdf', 'Receipt A');
    const { id: otherId } = await upload(t.orgHeaders, 'b.pdf', 'Receipt B');
    const url = new URL((await read(t.orgHeaders, id)).downloadUrl);
    const signature = url.searchParams.get('signature') as string;
    const expires = Number(url.searchParams.get('expires'));
    const flipped = `${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`;
    const path = url.pathname;
    const cases = [
      `${path}?expires=${expires}&signature=${flipped}`,
      `${path}?expires=${expires + 3600}&signature=${signature}`,
      `${path}?expires=${expires}&signature=${signature.slice(0, 20)}`,
      `${path}?expires=${expires}&signature=`,
      `${path.replace(id, otherId)}?expires=${expires}&signature=${signature}`,
      `${path.replace(id, 'not-an-id')}?expires=${expires}&signature=${signature}`,
    ];
    for (const c of cases) refused(await t.app.inject({ method: 'GET', url: c }), 403, 'DOWNLOAD_LINK_INVALID');
    // Without the signature at all: the query fails validation.
    const bare = await t.app.inject({ method: 'GET', url: path });
    expect(bare.statusCode).toBe(400);
  });

  it('refuses an expired link with 410, and a deleted attachment’s link with 404', async () => {
    const { id } = await upload(t.orgHeaders, 'old.pdf', 'Receipt: old');
    const issued = signedDownload(t.app.downloadLinkKeys, t.orgId, id, new Date(Date.now() - 16 * 60_000));
    const path = `/api/v1/companies/${t.orgId}/attachments/${id}/download`;
    refused(await t.app.inject({ method: 'GET', url: `${path}?${issued.query}` }), 410, 'DOWNLOAD_LINK_EXPIRED');
    // Just inside its 15 minutes it still works.
    const recent = signedDownload(t.app.downloadLinkKeys, t.orgId, id, new Date(Date.now() - 14 * 60_000));
    expect((await t.app.inject({ method: 'GET', url: `${path}?${recent.query}` })).statusCode).toBe(200);

    const link = (await read(t.orgHeaders, id)).downloadUrl;
    const deleted = await t.app.inject({ method: 'DELETE', url: `/api/v1/attachments/${id}`, headers: t.orgHeaders });
    expect(deleted.statusCode, deleted.body).toBe(200);
    refused(await fetchLink(link), 404, 'ATTACHMENT_NOT_FOUND');
  });

  it('gives another firm nothing: its link opens only its file, moved to our company or file it is refused', async () => {
    const ours = await upload(t.orgHeaders, 'ours.pdf', 'Our receipt');
    const theirs = await upload(otherHeaders, 'theirs.pdf', 'Their receipt');
    const theirLink = new URL((await read(otherHeaders, theirs.id)).downloadUrl);
    expect(theirLink.pathname).toContain(other.orgId);
    const q = theirLink.search;
    // Their link, pointed at our company and/or our file.
    for (const path of [
      `/api/v1/companies/${t.orgId}/attachments/${theirs.id}/download`,
      `/api/v1/companies/${t.orgId}/attachments/${ours.id}/download`,
      `/api/v1/companies/${other.orgId}/attachments/${ours.id}/download`,
    ]) {
      refused(await t.app.inject({ method: 'GET', url: `${path}${q}` }), 403, 'DOWNLOAD_LINK_INVALID');
    }
    // Their credential cannot read our attachment (and so never gets a link to it).
    const readOurs = await t.app.inject({
      method: 'GET',
      url: `/api/v1/attachments/${ours.id}`,
      headers: otherHeaders,
    });
    expect(readOurs.statusCode).toBe(404);
    // Their own link works for their own file.
    const got = await fetchLink(theirLink.toString());
    expect(sha(got.rawPayload)).toBe(sha(theirs.pdf));
  });

  it('keeps the signature out of request logs', () => {
    const path = `/api/v1/companies/${randomUUID()}/attachments/${randomUUID()}/download`;
    expect(loggedUrl(`${path}?expires=1800000000&signature=abcDEF_-123`)).toBe(
      `${path}?expires=1800000000&signature=[redacted]`,
    );
    expect(loggedUrl(`${path}?signature=abc&expires=1`)).toBe(`${path}?signature=[redacted]&expires=1`);
    expect(loggedUrl('/api/v1/attachments?limit=5')).toBe('/api/v1/attachments?limit=5');
  });

  it('gives the gateway’s Attachable a TempDownloadUri that downloads the file', async () => {
    const { id, pdf } = await upload(t.orgHeaders, 'gw.pdf', 'Receipt: gateway');
    const res = await t.app.inject({
      method: 'GET',
      url: `/agent/v1/acct/clients/${t.orgId}/entities/Attachable/${id}`,
      headers: t.auth,
    });
    expect(res.statusCode, res.body).toBe(200);
    const uri = res.json().data.TempDownloadUri as string;
    expect(new URL(uri).origin).toBe('https://books.example.com');
    const got = await fetchLink(uri);
    expect(got.statusCode, got.body).toBe(200);
    expect(sha(got.rawPayload)).toBe(sha(pdf));
  });
});
