import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import type { Envelope } from './worker';

export interface ReceivedRequest {
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver answers; `hang` never answers (until the receiver closes); `close` drops the connection. */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | 'hang' | 'close';

/**
 * A webhook receiver on a loopback port: records every request and answers as the test says. `down()`
 * stops listening (connections are refused) and `up()` listens again on the same port.
 */
export interface Receiver {
  url: string;
  received: ReceivedRequest[];
  reply: (request: ReceivedRequest, index: number) => Reply;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hooks'): Promise<Receiver> {
  let server: Server | null = null;
  let port = 0;
  const receiver: Receiver = {
    url: '',
    received: [],
    reply: () => ({ status: 204 }),
    async down() {
      const current = server;
      server = null;
      if (!current) return;
      current.closeAllConnections();
      await new Promise<void>((resolve) => current.close(() => resolve()));
    },
    async up() {
      const next = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
          receiver.received.push(request);
          const answer = receiver.reply(request, receiver.received.length - 1);
          if (answer === 'hang') return;
          if (answer === 'close') {
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.status, answer.headers ?? {});
          res.end(answer.body ?? '');
        });
      });
      await new Promise<void>((resolve) => next.listen(port, '127.0.0.1', () => resolve()));
      port = (next.address() as AddressInfo).port;
      server = next;
      receiver.url = `http://127.0.0.1:${port}${path}`;
    },
    close() {
      return receiver.down();
    },
  };
  await receiver.up();
  return receiver;
}

/** Verifies a received request the way a receiver would, with the `standardwebhooks` package. */
export function verifyDelivery(secret: string, request: ReceivedRequest): Envelope {
  const headers = {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  };
  return new Webhook(secret).verify(request.body, headers) as Envelope;
}
