import swagger from '@fastify/swagger';
import { ERROR_CODES, SCOPES } from '@firm/core';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { ERROR_TABLE } from '../errors';
import { VERSION } from '../version';

/** What each tag groups; every tag a route uses is declared, with its description when it has one here. */
const TAG_DESCRIPTIONS: Record<string, string> = {
  health: 'Deployment health',
  organizations: 'Client companies of the firm',
  accounts: 'Chart of accounts',
  entries: 'Journal entries: drafts, posting, voiding, and the lines behind every balance',
  posting: 'Posting routes: one balanced, posted entry per request, with Idempotency-Key',
  reports: 'Trial balance, balance sheet, profit and loss, general ledger, aging',
  books: 'Closing the books and the fiscal year',
  audit: 'The audit trail',
  contacts: 'Customers and vendors',
  items: 'Products and services',
  'tax-rates': 'Sales tax rates',
  webhooks: 'Webhook subscriptions, deliveries and the event catalogue',
  oauth: 'OAuth 2.0 for partner apps: metadata, registration, authorization, tokens, connected apps',
  session: 'Browser sign-in',
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

/** The OpenAPI 3.1 document, generated from the route schemas and served at /api/openapi.json. */
export const openapiPlugin = fp(async (app: FastifyInstance, opts: { origin: string | undefined }) => {
  await app.register(swagger, {
    transformObject: (document) =>
      withAgentServer(
        declareTags((document as { openapiObject: OpenApiDocument }).openapiObject),
        opts.origin,
      ) as never,
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Firm accounting API',
        version: VERSION,
        description: [
          'Double-entry books of the client companies an accounting firm manages.',
          'Money is integer cents. Dates are YYYY-MM-DD. Lists return `{data, nextCursor}` and take `limit` (1-1000, default 100) and `cursor`.',
          'Errors are `{error: {code, message, retryable, requestId, details?}}`; `x-error-codes` lists every code with its status.',
          'Organization-header routes take the organization from `x-organization-id`; company-path routes from `:companyId`.',
        ].join('\n\n'),
      },
      servers: opts.origin ? [{ url: opts.origin }] : [],
      components: {
        securitySchemes: {
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
      schema: {
        tags: ['health'],
        summary: 'This OpenAPI 3.1 document',
        response: { 200: Type.Object({}, { additionalProperties: true }) },
      },
    },
    async () => app.swagger(),
  );
});
