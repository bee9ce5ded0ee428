import swagger from '@fastify/swagger';
import { ERROR_CODES, SCOPES } from '@firm/core';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { ERROR_TABLE } from '../errors/catalogue';
import { hoistComponentSchemas, pascal } from './openapi-components';
import { VERSION } from '../version';

/** What each tag groups; every tag a route uses is declared, with its description when it has one here. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  health: 'Deployment health',
  organizations: 'Client companies of the firm',
  accounts: 'Chart of accounts',
  entries: 'Journal entries: drafts, posting, voiding, and the lines behind every balance',
  posting: 'Posting routes: one balanced, posted entry per request, with Idempotency-Key',
  reports: 'Trial balance, balance sheet, profit and loss, general ledger, aging',
  banking: 'Bank accounts, bank transactions and their actions, bank feeds, reconciliations',
  books: 'Closing the books and the fiscal year',
  audit: 'The audit trail',
  contacts: 'Customers and vendors',
  items: 'Products and services',
  'tax-rates': 'Sales tax rates',
  webhooks: 'Webhook subscriptions, deliveries and the event catalogue',
  oauth: 'OAuth 2.0 for partner apps: metadata, registration, authorization, tokens, connected apps',
  session: 'Browser sign-in, and the invitation links that let invited users choose a password',
  approvals: "The approvers' pages: agent proposals to approve or reject in a browser, for people signed in",
  users: "The firm's people: invitations, roles, the companies members may see, deactivation",
  'api-keys': "The firm's API keys: issuing (shown once), listing with last use, revoking",
  qbo: "QuickBooks Online: connecting a client's company, its status, disconnecting",
  invoices: 'Invoices to customers: drafts, sending, posting, voiding, and what is still owed',
  'sales-receipts': 'Sales paid on the spot',
  'credit-memos': 'Credits to customers, applied to their invoices or refunded',
  'refund-receipts': 'Money paid back to customers',
  estimates: 'Quotes to customers, turned into invoices when accepted',
  'customer-payments': 'Payments received from customers, allocated to their invoices',
  bills: 'Bills from vendors',
  'bill-payments': 'Payments of vendor bills, allocated to them and to vendor credits',
  'vendor-credits': 'Credits from vendors, applied to their bills',
  'agent-gateway':
    "The agent gateway, under /agent/v1: the firm's clients, their records in the accounting platform's own shapes, " +
    'and the audit trail of what agents did',
};

type OpenApiDocument = {
  tags?: { name: string; description?: string }[];
  servers?: { url: string; description?: string }[];
  paths?: Record<string, Record<string, { tags?: string[] }>>;
};

function declareTags(document: OpenApiDocument): OpenApiDocument {
  const used = new Set<string>();
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations)) for (const tag of operation.tags ?? []) used.add(tag);
  }
  const tags = [...used]
    .sort()
    .map((name) => (TAG_DESCRIPTIONS[name] ? { name, description: TAG_DESCRIPTIONS[name] } : { name }));
  return { ...document, tags };
}

/**
 * `getCompaniesByCompanyIdAccounts` for `GET /api/v1/companies/:companyId/accounts`: the method, then the path's
 * words (the `api` and version prefixes dropped unless `full`), parameters as `By<Name>`.
 */
export function operationIdOf(method: string, url: string, full: boolean): string {
  const segments = url.split('/').filter(Boolean);
  const words = (full ? segments : segments.filter((seg, i) => !(i === 0 && seg === 'api') && !/^v\d+$/.test(seg))).map(
    (seg) => (seg.startsWith(':') ? `By${pascal(seg.slice(1))}` : pascal(seg)),
  );
  return method.toLowerCase() + words.join('');
}

/**
 * Lists the agent gateway's base URL as a server. Added once the paths are generated: @fastify/swagger strips a
 * server's path from every path that starts with it, and this document writes the gateway's paths in full.
 */
function withAgentServer(document: OpenApiDocument, origin: string | undefined): OpenApiDocument {
  return {
    ...document,
    servers: [
      ...(document.servers ?? []),
      {
        url: `${origin ?? ''}/agent/v1`,
        description:
          'The agent gateway ({agent_base_url}; version 1 in its path). Its operations are written in this document ' +
          'with their full path, under /agent/v1, as those of the partner API are under /api/v1.',
      },
    ],
  };
}

/** Text Postgres can store: the server refuses NUL (U+0000) in any request text; the document says so too. */
const NO_NUL = '^[^\\u0000]*$';

type JsonSchema = Record<string, unknown>;

/** Adds NO_NUL to every free-text string of a request schema (no format, pattern, enum or const of its own). */
function statePlainText(schema: unknown): void {
  if (!schema || typeof schema !== 'object') return;
  if (Array.isArray(schema)) {
    for (const item of schema) statePlainText(item);
    return;
  }
  const s = schema as JsonSchema;
  if (s.type === 'string' && !('format' in s) && !('pattern' in s) && !('enum' in s) && !('const' in s)) {
    s.pattern = NO_NUL;
  }
  for (const [key, value] of Object.entries(s)) if (key !== 'examples' && key !== 'default') statePlainText(value);
}

/** States in request bodies and parameters the text rule the server enforces before validation. */
function stateRequestText(document: OpenApiDocument): OpenApiDocument {
  for (const operations of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(operations) as JsonSchema[]) {
      statePlainText((operation.requestBody as JsonSchema | undefined)?.content);
      for (const parameter of (operation.parameters as JsonSchema[] | undefined) ?? [])
        statePlainText(parameter.schema);
    }
  }
  return document;
}

/**
 * One rule for query strings on every route (the onRoute hook below refuses a route that would break it): clients of
 * the QuickBooks-compatible gateway send `minorversion` everywhere, and a client may add a parameter a newer version
 * of a route takes.
 */
const QUERY_RULE =
  'Query parameters a route does not know are ignored, on every route (such as the `minorversion` QuickBooks ' +
  'clients add); those it documents are checked, and a value they do not take is 400 VALIDATION_ERROR naming it.';

/** The OpenAPI 3.1 document, generated from the route schemas and served at /api/openapi.json. */
export const openapiPlugin = fp(async (app: FastifyInstance, opts: { origin: string | undefined }) => {
  // Every operation has an id (for generated clients) and states its security: public ones `[]`.
  const operationIds = new Set<string>();
  app.addHook('onRoute', (route: RouteOptions) => {
    const schema = (route.schema ??= {}) as Record<string, unknown>;
    if ((schema.querystring as { additionalProperties?: unknown } | undefined)?.additionalProperties === false) {
      throw new Error(`${String(route.method)} ${route.url}: the API ignores query parameters it does not know`);
    }
    if (schema.hide) return;
    const method = [route.method].flat()[0] as string;
    if (method === 'HEAD') return;
    let id = (schema.operationId as string | undefined) ?? operationIdOf(method, route.url, false);
    if (operationIds.has(id)) id = operationIdOf(method, route.url, true);
    operationIds.add(id);
    schema.operationId = id;
    schema.security ??= [];
  });

  await app.register(swagger, {
    transformObject: (document) =>
      hoistComponentSchemas(
        withAgentServer(
          stateRequestText(declareTags((document as { openapiObject: OpenApiDocument }).openapiObject)),
          opts.origin,
        ),
      ) as never,
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Firm accounting API',
        version: VERSION,
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        description: [
          'Double-entry books of the client companies an accounting firm manages.',
          'Money is integer cents. Dates are YYYY-MM-DD. Lists return `{data, nextCursor}` and take `limit` (1-1000, default 100) and `cursor`.',
          'Errors are `{error: {code, message, retryable, requestId, details?}}`; `x-error-codes` lists every code with its status.',
          'Organization-header routes take the organization from `x-organization-id`; company-path routes from `:companyId`.',
          QUERY_RULE,
        ].join('\n\n'),
      },
      // Without PUBLIC_ORIGIN, the server that served the document (a relative URL).
      servers: [opts.origin ? { url: opts.origin } : { url: '/', description: 'This server' }],
      components: {
        securitySchemes: {
          metricsToken: { type: 'http', scheme: 'bearer', description: 'The METRICS_TOKEN of the deployment.' },
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: `API key (dk_live_…) or OAuth access token (mcp_at_…). Scopes: ${Object.entries(SCOPES)
              .map(([s, d]) => `\`${s}\` (${d})`)
              .join(', ')}.`,
          },
        },
      },
      'x-scopes': SCOPES,
      'x-error-codes': Object.fromEntries(ERROR_CODES.map((c) => [c, ERROR_TABLE[c]])),
    } as never,
  });

  app.get(
    '/api/openapi.json',
    {
      config: { withoutDatabase: true },
      schema: {
        tags: ['health'],
        summary: 'This OpenAPI 3.1 document',
        response: { 200: Type.Object({}, { additionalProperties: true }) },
      },
    },
    async () => app.swagger(),
  );
});
