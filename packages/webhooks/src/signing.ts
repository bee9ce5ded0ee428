import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

export const SIGNING_SECRET_PREFIX = 'whsec_';

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64, the form every verifier library reads. */
export const generateSigningSecret = (): string => SIGNING_SECRET_PREFIX + randomBytes(32).toString('base64');

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The Standard Webhooks headers for one request: HMAC-SHA256 (`v1`) of `id.timestamp.body` with
 * each active secret, space-separated, so that during a rotation receivers holding either the old
 * or the new secret can verify.
 */
export function signatureHeaders(
  eventId: string,
  at: Date,
  body: string,
  secrets: readonly string[],
): SignatureHeaders {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(' '),
  };
}
