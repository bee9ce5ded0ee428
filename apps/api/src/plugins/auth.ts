import { randomBytes, timingSafeEqual } from 'node:crypto';
import { isUuid } from '@firm/core';
import type { Executor } from '@firm/db';
import {
  authenticateAccessToken,
  type ApiKeyLookup,
  authenticateApiKey,
  LookupCache,
  type Credential,
  canSeeOrganization,
  findVisibleOrganization,
  type Organization,
} from '@firm/identity';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { errorResponses, sendError } from '../errors/responses';
import { bearerChallenge, tokenFitsPath } from '../origin';

/**
 * Turns a presented bearer token into a credential. Each credential kind adds one. `organizationId` is the
 * organization the request names, which an authenticator may read in the same query (`prefetchedOrganization`).
 */
export type Authenticator = (db: Executor, token: string, organizationId?: string) => Promise<Credential | null>;

/** Turns a request without a bearer token into a credential (the browser session cookie). May throw. */
export type RequestAuthenticator = (request: FastifyRequest) => Promise<Credential | null>;

declare module 'fastify' {
  interface FastifyInstance {
    /** The request's credential, resolved once per request: rate limiting keys on it before auth runs. */
    resolveCredential(request: FastifyRequest): Promise<Credential | null>;
    /**
     * API keys and the organizations they name, kept for AUTH_CACHE_TTL_MS. A route that changes an organization or
     * a key clears it, so this process sees its own changes at once; other processes see them when entries expire.
     */
    apiKeyCache: LookupCache<ApiKeyLookup>;
    /**
     * Whether the request is one the MCP endpoint made in this process on its caller's behalf (a header holding
     * this process's secret): a token bound to the MCP endpoint is accepted there.
     */
    isMcpCall(request: FastifyRequest): boolean;
    /** The headers that mark a request as the MCP endpoint's own (see isMcpCall). */
    mcpCallHeaders: Record<string, string>;
  }
}

const MCP_CALL_HEADER = 'x-mcp-call';

export interface AuthOptions {
  authenticators?: Authenticator[];
  requestAuthenticators?: RequestAuthenticator[];
}

export const ORGANIZATION_HEADER = 'x-organization-id';

const OrganizationHeader = Type.Object({
  [ORGANIZATION_HEADER]: Type.Optional(
    Type.String({ format: 'uuid', description: 'The organization (client company) the request acts on.' }),
  ),
});

/** The organization a request names, by its route's rule: the `:companyId` path parameter or the header. */
function namedOrganization(request: FastifyRequest): string | undefined {
  const source = request.routeOptions.config?.organization;
  if (source === 'path') return (request.params as { companyId?: string }).companyId;
  if (source === 'client') return (request.params as { clientId?: string }).clientId;
  if (source !== 'header') return undefined;
  const header = request.headers[ORGANIZATION_HEADER];
  return Array.isArray(header) ? header[0] : header;
}

/** Methods that only read. */
const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether a partner route's request writes to its organization: every method but GET and HEAD. */
export const writesToOrganization = (request: FastifyRequest): boolean => !READ_METHODS.has(request.method);

const ARCHIVED_NOTE = 'An archived company refuses it: 409 COMPANY_ARCHIVED (unarchive it first).';

/**
 * The one refusal of a write to an archived company: its books, reports and history stay readable, nothing is written
 * to them. Called where a write's organization is resolved: below for the partner API's routes (the MCP tools that
 * call them included), by the agent gateway's client hook once it knows the client is one the agent may see.
 */
export function refuseArchivedWrite(
  request: FastifyRequest,
  reply: FastifyReply,
  writes: boolean,
): FastifyReply | undefined {
  if (!writes || !request.organization?.archivedAt || request.routeOptions.config.archivedAllowed) return undefined;
  return sendError(
    reply,
    request,
    'COMPANY_ARCHIVED',
    'the company is archived: its books and reports can be read, nothing can be written to them; unarchive it first',
  );
}

function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Authentication, scope checks and organization selection, driven by each route's `config`:
 * a route declares `scope` (and `organization`) next to its path, and this plugin enforces both
 * and documents them in the OpenAPI document.
 */
export const authPlugin = fp(async (app: FastifyInstance, opts: AuthOptions) => {
  const apiKeyCache = new LookupCache<ApiKeyLookup>(app.config.AUTH_CACHE_TTL_MS);
  app.decorate('apiKeyCache', apiKeyCache);
  const mcpSecret = Buffer.from(randomBytes(32).toString('base64url'));
  app.decorate('mcpCallHeaders', { [MCP_CALL_HEADER]: mcpSecret.toString() });
  app.decorate('isMcpCall', (request: FastifyRequest) => {
    const given = Buffer.from(String(request.headers[MCP_CALL_HEADER] ?? ''));
    return given.length === mcpSecret.length && timingSafeEqual(given, mcpSecret);
  });
  const authenticators: Authenticator[] = [
    (db, token, organizationId) => authenticateApiKey(db, token, { organizationId, cache: apiKeyCache }),
    (db, token) => authenticateAccessToken(db, token),
    ...(opts.authenticators ?? []),
  ];
  const resolved = new WeakMap<FastifyRequest, Promise<Credential | null>>();
  const resolve = async (request: FastifyRequest): Promise<Credential | null> => {
    const token = bearerToken(request);
    if (token) {
      const named = namedOrganization(request);
      const organizationId = named && isUuid(named) ? named : undefined;
      for (const authenticate of authenticators) {
        const credential = await authenticate(app.database.db, token, organizationId);
        if (credential) return credential;
      }
      return null;
    }
    if (request.headers.authorization) return null;
    for (const authenticate of opts.requestAuthenticators ?? []) {
      const credential = await authenticate(request);
      if (credential) return credential;
    }
    return null;
  };
  app.decorate('resolveCredential', (request: FastifyRequest) => {
    let credential = resolved.get(request);
    if (!credential) {
      credential = resolve(request);
      resolved.set(request, credential);
    }
    return credential;
  });
  app.decorateRequest('credential', null as unknown as Credential);
  app.decorateRequest('organization', null as unknown as FastifyRequest['organization']);

  app.addHook('onRoute', (route: RouteOptions) => {
    const scope = route.config?.scope;
    // Copies: a route's schema object may be a module's constant, shared by every app built in this process.
    route.schema = { ...route.schema };
    const schema = route.schema;
    schema.response = { ...(schema.response as object | undefined) };
    const response = schema.response as Record<string, unknown>;
    const add = (...statuses: number[]) => {
      for (const [status, s] of Object.entries(errorResponses(...statuses))) response[status] ??= s;
    };
    add(400, 500, 503);
    // Every route a limiter counts can answer 429: public documents, the session and sign-in pages included.
    if (route.config?.rateLimit !== false) add(429);
    if (!scope) return;
    add(401, 403, 404);
    schema.security = [{ bearerAuth: [] }];
    (schema as Record<string, unknown>)['x-required-scope'] = scope;
    const needs = `Requires scope \`${scope}\`.`;
    schema.description = schema.description ? `${schema.description}\n\n${needs}` : needs;
    if (route.config?.organization === 'firm') {
      const firmWide = 'Needs a credential that covers every organization of the firm (not one limited to some).';
      schema.description = `${schema.description}\n\n${firmWide}`;
    }
    const methods = [route.method].flat();
    const writes =
      route.config?.organization === 'client'
        ? route.config.agentWrite === true
        : (route.config?.organization === 'header' || route.config?.organization === 'path') &&
          methods.some((m) => !READ_METHODS.has(m));
    if (writes && !route.config?.archivedAllowed) {
      add(409);
      schema.description = `${schema.description}\n\n${ARCHIVED_NOTE}`;
    }
    if (route.config?.organization === 'header') {
      const headers = (schema.headers ?? Type.Object({})) as ReturnType<typeof Type.Object>;
      schema.headers = Type.Object({ ...headers.properties, ...OrganizationHeader.properties });
    }
  });

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const config = request.routeOptions.config;
    if (!config.scope) return;
    const scope = config.scopeOf?.(request) ?? config.scope;
    const token = bearerToken(request);
    const credential = await app.resolveCredential(request);
    if (!credential) {
      reply.header('www-authenticate', bearerChallenge(request, token ? { error: 'invalid_token' } : {}));
      return sendError(
        reply,
        request,
        'UNAUTHENTICATED',
        token ? 'the credential is not valid' : 'send a credential as Authorization: Bearer <token>',
      );
    }
    const path = request.url.split('?')[0] ?? '';
    if (credential.kind === 'oauth_token' && !tokenFitsPath(credential.resource, path, app.isMcpCall(request))) {
      reply.header('www-authenticate', bearerChallenge(request, { error: 'invalid_token' }));
      return sendError(reply, request, 'UNAUTHENTICATED', 'this token was issued for another resource');
    }
    if (!credential.scopes.has(scope)) {
      if (token) reply.header('www-authenticate', bearerChallenge(request, { error: 'insufficient_scope', scope }));
      return sendError(reply, request, 'INSUFFICIENT_SCOPE', `this credential lacks the scope ${scope}`, [
        { message: 'missing scope', scope },
      ]);
    }
    // Firm-wide management (connected apps) acts on every organization: a credential limited to some may not.
    if (config.organization === 'firm' && credential.organizationIds !== null) {
      return sendError(
        reply,
        request,
        'FORBIDDEN',
        'this credential is limited to some organizations of the firm; firm-wide management needs one that covers all',
      );
    }
    request.credential = credential;
  });

  // Organization selection runs before body validation, so a caller learns nothing about a
  // request body for an organization it cannot see.
  app.addHook('preValidation', async (request: FastifyRequest, reply: FastifyReply) => {
    const source = request.routeOptions.config.organization;
    if (!request.credential || (source !== 'header' && source !== 'path' && source !== 'client')) return;
    let organizationId: string | undefined;
    if (source === 'path' || source === 'client') {
      organizationId = namedOrganization(request);
    } else {
      organizationId = namedOrganization(request) ?? request.credential.defaultOrganizationId ?? undefined;
      if (!organizationId) {
        return sendError(reply, request, 'ORGANIZATION_REQUIRED', `send the ${ORGANIZATION_HEADER} header`, [
          { field: `headers.${ORGANIZATION_HEADER}`, message: 'is required' },
        ]);
      }
      if (!isUuid(organizationId)) {
        return sendError(reply, request, 'VALIDATION_ERROR', 'the request failed validation', [
          { field: `headers.${ORGANIZATION_HEADER}`, message: 'must be a UUID' },
        ]);
      }
    }
    const prefetched = request.credential.prefetchedOrganization;
    let organization: Organization | null = null;
    if (organizationId && isUuid(organizationId)) {
      organization =
        prefetched?.id === organizationId
          ? prefetched.row && canSeeOrganization(request.credential, prefetched.row.id)
            ? prefetched.row
            : null
          : await findVisibleOrganization(app.database.db, request.credential, organizationId);
    }
    if (!organization) {
      return source === 'client'
        ? sendError(reply, request, 'CLIENT_NOT_FOUND', 'client not found')
        : sendError(reply, request, 'ORGANIZATION_NOT_FOUND', 'organization not found');
    }
    request.organization = organization;
    // The gateway's clients are refused once the gateway knows the agent may see them (its own client hook).
    if (source !== 'client') return refuseArchivedWrite(request, reply, writesToOrganization(request));
  });
});
