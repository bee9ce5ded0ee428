import { randomUUID } from 'node:crypto';
import { DomainError } from '@firm/core';
import { describe, expect, it } from 'vitest';
import { downloadLinkKeysFrom, signDownload, signedDownload, verifyDownload } from './links';

const serverKey = Buffer.alloc(32, 7);
const keys = downloadLinkKeysFrom([serverKey]);
const org = randomUUID();
const id = randomUUID();
const now = new Date('2026-03-01T12:00:00Z');

const codeOf = (f: () => void) => {
  try {
    f();
    return null;
  } catch (err) {
    return err instanceof DomainError ? err.code : String(err);
  }
};

const parse = (query: string) => {
  const q = new URLSearchParams(query);
  return { expires: Number(q.get('expires')), signature: q.get('signature') as string };
};

describe('download link signatures', () => {
  it('sign for 15 minutes with a key derived from the server key, never the key itself', () => {
    const link = signedDownload(keys, org, id, now);
    const { expires, signature } = parse(link.query);
    expect(expires).toBe(now.getTime() / 1000 + 900);
    expect(link.expiresAt).toBe('2026-03-01T12:15:00.000Z');
    expect(signature).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(keys.signing.equals(serverKey)).toBe(false);
    expect(codeOf(() => verifyDownload(keys, { organizationId: org, attachmentId: id, expires, signature }, now))).toBe(
      null,
    );
    // Ids compare without regard to case, as Postgres reads them.
    expect(
      codeOf(() =>
        verifyDownload(keys, { organizationId: org.toUpperCase(), attachmentId: id, expires, signature }, now),
      ),
    ).toBe(null);
  });

  it('refuse another attachment, company, expiry or key; and a link past its time', () => {
    const { expires, signature } = parse(signedDownload(keys, org, id, now).query);
    const check = (t: Partial<{ organizationId: string; attachmentId: string; expires: number; signature: string }>) =>
      codeOf(() => verifyDownload(keys, { organizationId: org, attachmentId: id, expires, signature, ...t }, now));
    expect(check({ attachmentId: randomUUID() })).toBe('DOWNLOAD_LINK_INVALID');
    expect(check({ organizationId: randomUUID() })).toBe('DOWNLOAD_LINK_INVALID');
    expect(check({ expires: expires + 1 })).toBe('DOWNLOAD_LINK_INVALID');
    expect(check({ signature: signature.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) })).toBe('DOWNLOAD_LINK_INVALID');
    expect(check({ signature: 'x' })).toBe('DOWNLOAD_LINK_INVALID');
    const otherKeys = downloadLinkKeysFrom([Buffer.alloc(32, 8)]);
    expect(check({ signature: signDownload(otherKeys, { organizationId: org, attachmentId: id, expires }) })).toBe(
      'DOWNLOAD_LINK_INVALID',
    );
    const later = new Date(now.getTime() + 15 * 60_000 + 1000);
    expect(
      codeOf(() => verifyDownload(keys, { organizationId: org, attachmentId: id, expires, signature }, later)),
    ).toBe('DOWNLOAD_LINK_EXPIRED');
  });

  it('keep a link working across a key rotation until it expires', () => {
    const { expires, signature } = parse(signedDownload(keys, org, id, now).query);
    const rotated = downloadLinkKeysFrom([Buffer.alloc(32, 9), serverKey]);
    expect(
      codeOf(() => verifyDownload(rotated, { organizationId: org, attachmentId: id, expires, signature }, now)),
    ).toBe(null);
  });
});
