import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError, MANAGER_SCOPES, type Scope } from '@firm/core';
import {
  type ApiKeyListing,
  type Credential,
  createApiKey,
  getApiKey,
  getUser,
  listApiKeys,
  type Manager,
  revokeApiKey,
} from '@firm/identity';
import { Type } from 'typebox';
import { errorResponses, sendError } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { firmManager } from '../context';
import { ApiKeyList, ApiKeyListQuery, ApiKeyOne, ApiKeyParams, ApiKeyWithSecretOne, CreateApiKeyBody } from './schemas';

const tags = ['api-keys'];
const WHAT = 'manage API keys';
const MANAGERS_ONLY =
  'Owners and admins only (a session, or an API key they made); never an OAuth token, whatever it was approved for.';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

// Stored scopes were checked against the catalogue when written.
const presentKey = (k: ApiKeyListing) => ({
  id: k.id,
  name: k.name,
  prefix: k.displayPrefix,
  scopes: k.scopes as Scope[],
  organizationIds: k.organizationIds,
  createdBy: k.createdBy,
  createdAt: k.createdAt.toISOString(),
  lastUsedAt: iso(k.lastUsedAt),
  revokedAt: iso(k.revokedAt),
});

/** The firm's API keys: list, issue (the key shown once), revoke. */
export const apiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  /**
   * Who a key issued to another user acts for, and what it may be given: what both the caller and that user reach
   * (a member's companies, and no management scope for them).
   */
  async function keyHolder(manager: Manager, credential: Credential, userId: string) {
    const user = await getUser(db(), manager.firmId, userId);
    if (user.status !== 'active') {
      throw new DomainError('INVALID_STATE', `keys are issued to active users only; this one is ${user.status}`);
    }
    if (user.role === 'owner' && manager.role !== 'owner') {
      throw new DomainError('FORBIDDEN', 'only owners issue a key acting for an owner');
    }
    const scopes = new Set([...credential.scopes].filter((s) => user.role !== 'member' || !MANAGER_SCOPES.has(s)));
    const mine = credential.organizationIds;
    const theirs = user.role === 'member' ? user.organizationIds : null;
    const organizationIds = mine && theirs ? mine.filter((id) => theirs.includes(id)) : (mine ?? theirs);
    if (organizationIds?.length === 0) {
      throw new DomainError('INVALID_ORGANIZATION', 'the caller and that user share no company to give the key', [
        { field: 'forUserId', message: 'no company both may reach' },
      ]);
    }
    return { userId: user.id, grantor: { scopes, organizationIds } };
  }

  app.get(
    '/api-keys',
    {
      config: { scope: 'keys:read', organization: 'firm' },
      schema: {
        tags,
        summary: "List the firm's API keys",
        description: `Never the keys themselves: their prefix, scopes, companies, maker and last use. ${MANAGERS_ONLY}`,
        querystring: ApiKeyListQuery,
        response: { 200: ApiKeyList },
      },
    },
    async (request) => {
      await firmManager(request, WHAT);
      const page = await listApiKeys(db(), request.credential.firmId, {
        limit: request.query.limit ?? DEFAULT_LIMIT,
        cursor: request.query.cursor,
        includeRevoked: request.query.includeRevoked,
      });
      return { data: page.data.map(presentKey), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/api-keys/:id',
    {
      config: { scope: 'keys:read', organization: 'firm' },
      schema: {
        tags,
        summary: 'An API key of the firm',
        description: MANAGERS_ONLY,
        params: ApiKeyParams,
        response: { 200: ApiKeyOne },
      },
    },
    async (request) => {
      await firmManager(request, WHAT);
      return { data: presentKey(await getApiKey(db(), request.credential.firmId, request.params.id)) };
    },
  );

  app.post(
    '/api-keys',
    {
      config: { scope: 'keys:write', organization: 'firm' },
      schema: {
        tags,
        summary: 'Issue an API key',
        description:
          'The response carries the key, shown only this once (only its hash is kept). The key acts for its maker ' +
          '(createdBy): it gets no scope the caller lacks (403 SCOPE_NOT_GRANTABLE) and no company outside its ' +
          `reach (422 INVALID_ORGANIZATION). With forUserId it is issued to that user and acts for them: for a ` +
          `bookkeeper's script, say, limited to their companies. ${MANAGERS_ONLY}`,
        body: CreateApiKeyBody,
        response: { 201: ApiKeyWithSecretOne, ...errorResponses(404, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const manager = await firmManager(request, WHAT);
      const { credential } = request;
      const holder = request.body.forUserId
        ? await keyHolder(manager, credential, request.body.forUserId)
        : {
            userId: credential.userId,
            grantor: { scopes: credential.scopes, organizationIds: credential.organizationIds },
          };
      const { key, record } = await createApiKey(
        db(),
        {
          firmId: credential.firmId,
          name: request.body.name,
          ...(request.body.scopes ? { scopes: request.body.scopes } : {}),
          ...(request.body.organizationIds ? { organizationIds: request.body.organizationIds } : {}),
          createdByUserId: holder.userId,
        },
        { grantor: holder.grantor, actor: manager },
      );
      const listed = await getApiKey(db(), credential.firmId, record.id);
      return reply.code(201).send({ data: { ...presentKey(listed), key } });
    },
  );

  app.delete(
    '/api-keys/:id',
    {
      config: { scope: 'keys:write', organization: 'firm' },
      schema: {
        tags,
        summary: 'Revoke an API key',
        description:
          'The key is refused (401) from the next request on, on every instance within AUTH_CACHE_TTL_MS (at ' +
          `once on the one that revoked it). Revoking a revoked key changes nothing. ${MANAGERS_ONLY}`,
        params: ApiKeyParams,
        response: { 204: Type.Null({ description: 'Revoked.' }) },
      },
    },
    async (request, reply) => {
      const manager = await firmManager(request, WHAT);
      const found = await revokeApiKey(db(), request.params.id, manager.firmId, manager);
      app.apiKeyCache.clear();
      if (!found) return sendError(reply, request, 'API_KEY_NOT_FOUND', 'no such API key of this firm');
      return reply.code(204).send(null);
    },
  );
};
