import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { CheckedTarget } from './address';

/** How much of a receiver's response body is read and kept for the delivery log. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface SendRequest {
  target: CheckedTarget;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

export interface SendResult {
  /** Null when no response arrived (timeout, connection error). */
  statusCode: number | null;
  latencyMs: number;
  /** The first 1 KB of the response body. */
  responseBody: string | null;
  error: string | null;
}

/** Sends one webhook request. */
export type Sender = (request: SendRequest) => Promise<SendResult>;

class DeliveryTimeout extends Error {}

/**
 * POSTs the body to the checked target. The connection goes to the address that was checked (the
 * socket's lookup answers with it), so a DNS answer that changes after the check cannot send the
 * request elsewhere; TLS still verifies the certificate against the host name. Redirects are not
 * followed (a 3xx is the answer), the whole exchange is bounded by the timeout, and at most 1 KB of
 * the response body is read before the connection is dropped.
 */
export const sendWebhook: Sender = ({ target, headers, body, timeoutMs }) =>
  new Promise<SendResult>((resolve) => {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const { address, family } = target.address;
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all) callback(null, [{ address, family }]);
      else callback(null, address, family);
    };
    let settled = false;
    const finish = (result: Omit<SendResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, latencyMs: elapsed() });
    };
    const transport = target.url.protocol === 'https:' ? https : http;
    const req = transport.request(
      target.url,
      {
        method: 'POST',
        agent: false,
        lookup: pinned,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'firm-ledger-webhooks/1',
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
          finish({ statusCode: res.statusCode ?? null, responseBody: excerpt, error: null });
          res.destroy();
        };
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= RESPONSE_EXCERPT_BYTES) done();
        });
        res.on('end', done);
        res.on('error', done);
      },
    );
    const timer = setTimeout(() => req.destroy(new DeliveryTimeout(`no response within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (err: NodeJS.ErrnoException) => {
      const message = err instanceof DeliveryTimeout || !err.code ? err.message : `${err.code}: ${err.message}`;
      finish({ statusCode: null, responseBody: null, error: message.slice(0, 500) });
    });
    req.end(body);
  });
