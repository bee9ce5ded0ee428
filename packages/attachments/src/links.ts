import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { DomainError, isUuid } from '@firm/core';

/** How long a download link works: 15 minutes, as QuickBooks' `TempDownloadUri`. */
export const DOWNLOAD_LINK_TTL_SECONDS = 15 * 60;

/**
 * The keys that sign download links: one derived (HKDF-SHA256) from each server key given, the first signing, every
 * one still verifying, so a link signed just before a key rotation works until it expires.
 */
export interface DownloadLinkKeys {
  signing: Buffer;
  verifying: readonly Buffer[];
}

const HKDF_INFO = 'attachment download link v1';

/** Download-link keys derived from server keys (the first current): never the server keys themselves. */
export function downloadLinkKeysFrom(serverKeys: readonly Buffer[]): DownloadLinkKeys {
  if (serverKeys.length === 0) throw new Error('download links need at least one server key');
  const derived = serverKeys.map((k) => Buffer.from(hkdfSync('sha256', k, Buffer.alloc(0), HKDF_INFO, 32)));
  return { signing: derived[0] as Buffer, verifying: derived };
}

export interface DownloadLinkTarget {
  organizationId: string;
  attachmentId: string;
  /** Unix seconds after which the link no longer works. */
  expires: number;
}

const messageOf = (t: DownloadLinkTarget) =>
  `attachment-download\n${t.organizationId.toLowerCase()}\n${t.attachmentId.toLowerCase()}\n${t.expires}`;

const macOf = (key: Buffer, t: DownloadLinkTarget) => createHmac('sha256', key).update(messageOf(t)).digest();

/** The signature of a link to one attachment of one company until `expires`: HMAC-SHA256, base64url. */
export const signDownload = (keys: DownloadLinkKeys, target: DownloadLinkTarget): string =>
  macOf(keys.signing, target).toString('base64url');

export interface SignedDownload {
  /** Its query string, to put after the download path: `expires=...&signature=...`. */
  query: string;
  expiresAt: string;
}

/** A link to one attachment, working for DOWNLOAD_LINK_TTL_SECONDS from `now`. */
export function signedDownload(
  keys: DownloadLinkKeys,
  organizationId: string,
  attachmentId: string,
  now: Date = new Date(),
): SignedDownload {
  const expires = Math.floor(now.getTime() / 1000) + DOWNLOAD_LINK_TTL_SECONDS;
  const signature = signDownload(keys, { organizationId, attachmentId, expires });
  return { query: `expires=${expires}&signature=${signature}`, expiresAt: new Date(expires * 1000).toISOString() };
}

const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Checks a link: the signature first (403 DOWNLOAD_LINK_INVALID when no key signed these very attachment, company
 * and expiry), then its time (410 DOWNLOAD_LINK_EXPIRED). Compared in constant time.
 */
export function verifyDownload(
  keys: DownloadLinkKeys,
  target: { organizationId: string; attachmentId: string; expires: number; signature: string },
  now: Date = new Date(),
): void {
  const invalid = () => new DomainError('DOWNLOAD_LINK_INVALID', 'the download link is not valid; ask for a new one');
  if (
    !SIGNATURE.test(target.signature) ||
    !Number.isSafeInteger(target.expires) ||
    !isUuid(target.organizationId) ||
    !isUuid(target.attachmentId)
  ) {
    throw invalid();
  }
  const given = Buffer.from(target.signature, 'base64url');
  let valid = false;
  for (const key of keys.verifying) {
    const expected = macOf(key, target);
    if (expected.length === given.length && timingSafeEqual(expected, given)) valid = true;
  }
  if (!valid) throw invalid();
  if (Math.floor(now.getTime() / 1000) > target.expires) {
    throw new DomainError('DOWNLOAD_LINK_EXPIRED', 'the download link has expired; ask for a new one', [
      { field: 'querystring.expires', message: `expired at ${new Date(target.expires * 1000).toISOString()}` },
    ]);
  }
}
