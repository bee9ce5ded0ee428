import swagger from '@fastify/swagger';
import { ERROR_CODES, SCOPES } from '@firm/core';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { ERROR_TABLE } from '../errors';
import { VERSION } from '../version';

/** The OpenAPI 3.1 document, generated from the route schemas and served at /api/openapi.json. */
export const openapiPlugin = fp(async (app: FastifyInstance, opts: { origin: string | undefined }) => {
  await app.register(swagger, {
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
      tags: [
        { name: 'health' },
        { name: 'organizations', description: 'Client companies of the firm' },
        { name: 'accounts', description: 'Chart of accounts' },
        { name: 'oauth', description: 'OAuth 2.0 for partner apps: metadata, registration, authorization, tokens' },
        { name: 'session', description: 'Browser sign-in' },
      ],
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
