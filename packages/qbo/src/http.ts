import { randomUUID } from 'node:crypto';
import { DomainError } from '@firm/core';
import type { Db } from '@firm/db';
import { QBO_MINOR_VERSION, type QboConfig } from './config';
import { faultError, faultOf, isAuthenticationFault, isThrottleFault } from './faults';
import type { QboLimiter } from './limiter';
import { accessToken, markNeedsReauth, needsReauth, touchLastSync } from './tokens';

export interface QboRequest {
  method: 'GET' | 'POST';
  /** Relative to `/v3/company/{realmId}/`, e.g. `invoice/130`, `query`, `reports/ProfitAndLoss`. */
  path: string;
  query?: Record<string, string | undefined>;
  body?: unknown;
  /**
   * A multipart/form-data body instead of JSON (QBO's `upload`): sent whole again on each retry, its boundary and
   * parts' headers written by fetch.
   */
  form?: FormData;
  /** A write's requestid; by default a fresh one per call (the same on each of its retries). */
  requestId?: string | undefined;
}

/** An access token and the company it is to reach. */
export interface QboGrant {
  token: string;
  realmId: string;
}

export type QboHttpOptions = {
  config: QboConfig;
  limiter: QboLimiter;
  /** The first retry's delay; later ones double, each with jitter. */
  baseDelayMs?: number;
  /** The longest Retry-After this client waits out itself; a longer one is the caller's to wait. */
  maxWaitMs?: number;
} & (
  | {
      /** The organization whose stored connection the calls use, its token refreshed as needed. */
      db: Db;
      organizationId: string;
      grant?: never;
    }
  | {
      /**
       * A token not stored anywhere (one just granted, being checked): used as it is, never refreshed; a 401 is a
       * refusal, and no connection is marked or touched.
       */
      grant: QboGrant;
      db?: never;
      organizationId?: never;
    }
);

/** Why an attempt did not produce an answer to return. */
type Attempt =
  { kind: 'answer'; status: number; body: unknown; retryAfter: number | null } | { kind: 'lost'; reason: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function retryAfterMs(header: string | null): number | null {
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/**
 * One organization's QBO company over HTTP. Every request carries the pinned `minorversion`; every write a
 * `requestid` generated once for it and sent again on each retry, so a write whose answer was lost (timeout, dropped
 * connection, 5xx) is retried and QBO answers with the one record it kept, never a second one. Reads and writes are
 * retried on 429, 5xx, timeouts and dropped connections with jittered exponential backoff (429 waits out its
 * Retry-After when short), within the per-company limits; a 401 refreshes the token once. A multipart upload (an
 * Attachable's file) is a write like the others: the same requestid, retries and token handling, its body sent whole
 * on each attempt. Faults become the gateway's errors (see faults.ts).
 */
export class QboHttp {
  /** The access token this client last used: read once, not again for each call an operation makes. */
  private auth: QboGrant | null = null;

  constructor(private readonly options: QboHttpOptions) {}

  /** The stored connection's token (refreshed when `rejected` is still the stored one), or the given grant. */
  private async token(rejected?: QboGrant): Promise<QboGrant> {
    const { config, db, organizationId, grant } = this.options;
    if (grant) {
      if (rejected) {
        throw new DomainError('FORBIDDEN', `QuickBooks refused the authorization for company ${grant.realmId}`, [
          { message: 'the access token was refused', platform: 'qbo' },
        ]);
      }
      return grant;
    }
    return accessToken(db, config, organizationId, rejected ? { rejected: rejected.token } : {});
  }

  async request(req: QboRequest): Promise<unknown> {
    const { config, db, organizationId, limiter } = this.options;
    const baseDelay = this.options.baseDelayMs ?? 250;
    const maxWait = this.options.maxWaitMs ?? 10_000;
    const requestId = req.method === 'POST' ? (req.requestId ?? randomUUID()) : null;
    let auth = this.auth ?? (await this.token());
    this.auth = auth;
    let refreshedOn401 = false;
    let last: Attempt | null = null;
    for (let attempt = 0; attempt <= config.retries; attempt++) {
      if (attempt > 0) {
        const wait = last?.kind === 'answer' && last.retryAfter !== null ? last.retryAfter : null;
        await sleep(wait ?? baseDelay * 2 ** (attempt - 1) * (0.5 + Math.random()));
      }
      last = await this.attempt(auth, req, requestId, limiter);
      if (last.kind === 'lost') continue;
      const { status, body } = last;
      const fault = faultOf(body);
      if (status === 401 || (status === 403 && isAuthenticationFault(fault))) {
        if (refreshedOn401 && db) {
          this.auth = null;
          await markNeedsReauth(db, organizationId, 'QuickBooks refused a freshly refreshed access token');
          throw needsReauth(auth.realmId);
        }
        refreshedOn401 = true;
        auth = await this.token(auth);
        this.auth = auth;
        attempt--; // the refresh is not a retry
        continue;
      }
      if (status === 429 || isThrottleFault(fault)) {
        if (last.retryAfter !== null && last.retryAfter > maxWait) break;
        continue;
      }
      if (status >= 500) continue;
      if (fault) throw faultError(fault, status);
      if (status >= 400) {
        throw new DomainError('PLATFORM_ERROR', `QuickBooks answered ${status}`, [
          { message: `status ${status}`, platform: 'qbo' },
        ]);
      }
      if (db) await touchLastSync(db, organizationId).catch(() => {});
      return body;
    }
    // Out of attempts.
    if (last?.kind === 'answer' && (last.status === 429 || isThrottleFault(faultOf(last.body)))) {
      const seconds = Math.ceil((last.retryAfter ?? 60_000) / 1000);
      throw new DomainError('RATE_LIMITED', `QuickBooks is throttling this company; retry in ${seconds} s`, [
        { message: 'QuickBooks throttled the request', platform: 'qbo', retryAfterSeconds: seconds },
      ]);
    }
    const why = last?.kind === 'lost' ? last.reason : `status ${last?.status}`;
    throw new DomainError(
      'SERVICE_UNAVAILABLE',
      `QuickBooks did not answer usefully after ${config.retries + 1} attempts (${why})`,
    );
  }

  private async attempt(
    auth: QboGrant,
    req: QboRequest,
    requestId: string | null,
    limiter: QboLimiter,
  ): Promise<Attempt> {
    const { config } = this.options;
    const url = new URL(`${config.apiBaseUrl}/v3/company/${encodeURIComponent(auth.realmId)}/${req.path}`);
    for (const [name, value] of Object.entries(req.query ?? {}))
      if (value !== undefined) url.searchParams.set(name, value);
    url.searchParams.set('minorversion', QBO_MINOR_VERSION);
    if (requestId) url.searchParams.set('requestid', requestId);
    const release = await limiter.acquire(auth.realmId);
    try {
      const json = req.form === undefined && req.body !== undefined;
      const res = await fetch(url, {
        method: req.method,
        headers: {
          authorization: `Bearer ${auth.token}`,
          accept: 'application/json',
          ...(json ? { 'content-type': 'application/json' } : {}),
        },
        ...(req.form !== undefined ? { body: req.form } : json ? { body: JSON.stringify(req.body) } : {}),
        signal: AbortSignal.timeout(config.timeoutMs),
      });
      const text = await res.text();
      let body: unknown = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = null;
      }
      return { kind: 'answer', status: res.status, body, retryAfter: retryAfterMs(res.headers.get('retry-after')) };
    } catch (err) {
      return { kind: 'lost', reason: (err as Error).name === 'TimeoutError' ? 'timeout' : 'connection lost' };
    } finally {
      release();
    }
  }
}
