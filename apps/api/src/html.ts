import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ERROR_TABLE } from './errors/catalogue';
import { sendError, toErrorResponse } from './errors/responses';

/** HTML that is already escaped: what `html` returns. */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);

function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** A template whose interpolations are escaped unless they are `Html` themselves. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new Html(out);
}

const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:32rem;margin:3rem auto;background:#fff;padding:2rem;border-radius:8px;box-shadow:0 1px 3px #0002}
h1{font-size:1.4rem;margin-top:0}label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input[type=email],input[type=password]{width:100%;padding:.5rem;box-sizing:border-box;font:inherit}
button{font:inherit;padding:.5rem 1.2rem;margin:1rem .5rem 0 0;border-radius:4px;border:1px solid #445;cursor:pointer}
button.primary{background:#1f5fbf;color:#fff;border-color:#1f5fbf}.error{color:#a30000;font-weight:600}
ul.scopes li{margin:.3rem 0}.muted{color:#556}fieldset{border:1px solid #ccd;border-radius:4px;margin-top:1rem}
fieldset label{font-weight:400;margin:.3rem 0}
main.wide{max-width:60rem}table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #dde;padding:.3rem .5rem;text-align:left}.num{text-align:right}
textarea{width:100%;box-sizing:border-box;font:inherit}pre{background:#f4f5f7;padding:.5rem;overflow:auto}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dd{margin:0}.notice{color:#0a5d1f;font-weight:600}
section.proposal{border-top:1px solid #ccd;margin-top:1.5rem}
`;

export interface PageOptions {
  status?: number;
  /** Extra origins forms may submit to (the consent form ends in a redirect to the app). */
  formTargets?: string[];
  /** A wider page, for tables (the approvers' pages). */
  wide?: boolean;
}

/**
 * Sends a page: never cached, never framed (clickjacking on the consent page), no scripts, and forms
 * that may only post to us (and, for the consent form, to the app's redirect origin).
 */
export function sendPage(reply: FastifyReply, title: string, body: Html, options: PageOptions = {}): FastifyReply {
  const formAction = ["'self'", ...(options.formTargets ?? [])].join(' ');
  // Referrer-Policy same-origin, not no-referrer: under no-referrer browsers send `Origin: null` with the page's own
  // form posts, which the origin rule refuses; same-origin still keeps the page's address (OAuth parameters) from
  // every other site.
  return reply
    .code(options.status ?? 200)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'same-origin')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'unsafe-inline'; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .send(
      html`<!doctype html>
        <html lang="en">
          <head>
            <meta charset="utf-8" />
            <meta name="viewport" content="width=device-width,initial-scale=1" />
            <title>${title}</title>
            <style>
              ${new Html(STYLE)}
            </style>
          </head>
          <body>
            <main ${options.wide ? new Html('class="wide"') : ''}>${body}</main>
          </body>
        </html> `.value,
    );
}

/** An error page for people: what went wrong, in words. */
export const sendErrorPage = (reply: FastifyReply, status: number, title: string, message: string | Html) =>
  sendPage(
    reply,
    title,
    html`<h1>${title}</h1>
      <p class="error">${message}</p>`,
    { status },
  );

/** OpenAPI response schemas of routes that answer with pages and redirects. */
export const HtmlPage = (description: string) => ({ description, content: { 'text/html': { schema: Type.String() } } });
export const Redirect = (description: string) => ({
  description,
  headers: { location: Type.String({ description: 'Where the browser goes next.' }) },
  type: 'null',
});

/**
 * The error handler of page routes: people get a page, not JSON. A 429 keeps the documented JSON
 * error shape (code RATE_LIMITED) and its Retry-After header.
 */
export function pageErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const mapped = toErrorResponse(err);
  if (mapped.code === 'RATE_LIMITED') return sendError(reply, request, mapped.code, mapped.message, mapped.details);
  if (mapped.code === 'INTERNAL_ERROR') {
    request.log.error({ err }, 'unexpected error');
    return sendErrorPage(reply, 500, 'Something went wrong', `Please try again. Reference: ${request.id}`);
  }
  const status = ERROR_TABLE[mapped.code].status;
  const detail = mapped.details?.map((d) => `${d.field ?? ''} ${d.message}`.trim()).join('; ');
  return sendErrorPage(
    reply,
    status,
    'This request cannot be handled',
    detail ? `${mapped.message}: ${detail}` : mapped.message,
  );
}
