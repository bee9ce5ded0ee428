import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  deactivateUser,
  type FirmUser,
  getUser,
  type Invitation,
  inviteUser,
  listUsers,
  reissueInvitation,
  updateUser,
} from '@firm/identity';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { publicOrigin } from '../../origin';
import { DEFAULT_LIMIT } from '../../schemas';
import { firmManager } from '../context';
import {
  InvitedUserOne,
  InviteUserBody,
  UpdateUserBody,
  UserList,
  UserListQuery,
  UserOne,
  UserParams,
} from './schemas';

const tags = ['users'];
const WHAT = 'manage users';
const MANAGERS_ONLY =
  'Owners and admins only (a session, or an API key they made); never an OAuth token, whatever it was approved for.';

export const presentUser = (u: FirmUser) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  role: u.role,
  status: u.status,
  organizationIds: u.organizationIds,
  createdAt: u.createdAt.toISOString(),
  deactivatedAt: u.deactivatedAt ? u.deactivatedAt.toISOString() : null,
});

/** The link of an invitation on this site. */
export const invitationUrl = (request: FastifyRequest, token: string) => `${publicOrigin(request)}/invite/${token}`;

const presentInvitation = (request: FastifyRequest, invitation: Invitation) => ({
  url: invitationUrl(request, invitation.token),
  expiresAt: invitation.expiresAt.toISOString(),
});

/** The firm's people: invite, list, change roles and companies, deactivate. */
export const userRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  const ttlMs = () => app.config.INVITATION_TTL_HOURS * 3_600_000;

  app.get(
    '/users',
    {
      config: { scope: 'users:read', organization: 'firm' },
      schema: {
        tags,
        summary: "List the firm's users",
        description: `Every user of the firm, invited and deactivated ones included, oldest first. ${MANAGERS_ONLY}`,
        querystring: UserListQuery,
        response: { 200: UserList },
      },
    },
    async (request) => {
      await firmManager(request, WHAT);
      const page = await listUsers(db(), request.credential.firmId, {
        limit: request.query.limit ?? DEFAULT_LIMIT,
        cursor: request.query.cursor,
      });
      return { data: page.data.map(presentUser), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/users/:id',
    {
      config: { scope: 'users:read', organization: 'firm' },
      schema: {
        tags,
        summary: 'A user of the firm',
        description: MANAGERS_ONLY,
        params: UserParams,
        response: { 200: UserOne },
      },
    },
    async (request) => {
      await firmManager(request, WHAT);
      return { data: presentUser(await getUser(db(), request.credential.firmId, request.params.id)) };
    },
  );

  app.post(
    '/users',
    {
      config: { scope: 'users:write', organization: 'firm' },
      schema: {
        tags,
        summary: 'Invite a user',
        description:
          'Adds the user at once (status invited, no password) and returns, this once, their sign-in link: it works ' +
          'once, for INVITATION_TTL_HOURS (7 days by default), and lets them choose a password and signs them in. ' +
          'No mail is sent; pass the link on. Members may be limited to some companies (organizationIds). Only ' +
          'owners invite owners (403 FORBIDDEN for an admin). An email already in use, by any firm, is 409 ' +
          `EMAIL_TAKEN; a company id that is not one of the firm's is 422 INVALID_ORGANIZATION. ${MANAGERS_ONLY}`,
        body: InviteUserBody,
        response: { 201: InvitedUserOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const manager = await firmManager(request, WHAT);
      const { user, invitation } = await inviteUser(db(), manager, {
        firmId: manager.firmId,
        email: request.body.email,
        name: request.body.name,
        role: request.body.role,
        organizationIds: request.body.organizationIds,
        ttlMs: ttlMs(),
      });
      return reply
        .code(201)
        .send({ data: { ...presentUser(user), invitation: presentInvitation(request, invitation) } });
    },
  );

  app.post(
    '/users/:id/invitation',
    {
      config: { scope: 'users:write', organization: 'firm' },
      schema: {
        tags,
        summary: 'A new invitation link',
        description:
          'For a user still invited (their link expired or was lost): a new link, shown once; earlier links stop ' +
          `working. A user who already signed up or was deactivated is 409 INVALID_STATE. ${MANAGERS_ONLY}`,
        params: UserParams,
        response: { 201: InvitedUserOne, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const manager = await firmManager(request, WHAT);
      const { user, invitation } = await reissueInvitation(db(), manager, request.params.id, ttlMs());
      return reply
        .code(201)
        .send({ data: { ...presentUser(user), invitation: presentInvitation(request, invitation) } });
    },
  );

  app.patch(
    '/users/:id',
    {
      config: { scope: 'users:write', organization: 'firm' },
      schema: {
        tags,
        summary: "Change a user's name, role or companies",
        description:
          'Every credential acting for the user (session, API keys they made, OAuth tokens they approved) follows ' +
          'the change on its next request: a member sees only their organizationIds; a user made member loses the ' +
          "firm's management scopes and the OAuth connections they approved stop working. organizationIds is for " +
          'members only (null: every company); it is dropped when the role becomes owner or admin. Only owners ' +
          'change owners or make one (403 FORBIDDEN); the last active owner keeps the role (409 LAST_OWNER); a ' +
          `deactivated user cannot be changed (409 INVALID_STATE). ${MANAGERS_ONLY}`,
        params: UserParams,
        body: UpdateUserBody,
        response: { 200: UserOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request) => {
      const manager = await firmManager(request, WHAT);
      const user = await updateUser(db(), manager, request.params.id, request.body);
      // Keys this process keeps carry their maker's role and companies.
      app.apiKeyCache.clear();
      return { data: presentUser(user) };
    },
  );

  app.delete(
    '/users/:id',
    {
      config: { scope: 'users:write', organization: 'firm' },
      schema: {
        tags,
        summary: 'Deactivate a user',
        description:
          'Takes the user off the firm at once: they cannot sign in, their sessions end, the OAuth connections they ' +
          'approved are revoked with every token, and the API keys they made and their open invitations are ' +
          'revoked; the next request with any of them is 401. The user stays listed (status deactivated) and in the ' +
          'audit trail; deactivating again changes nothing. Only owners deactivate owners (403 FORBIDDEN); the ' +
          `last active owner cannot be deactivated (409 LAST_OWNER). ${MANAGERS_ONLY}`,
        params: UserParams,
        response: { 204: Type.Null({ description: 'Deactivated.' }), ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const manager = await firmManager(request, WHAT);
      await deactivateUser(db(), manager, request.params.id);
      app.apiKeyCache.clear();
      return reply.code(204).send(null);
    },
  );
};
