import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Approver } from '@firm/gateway';
import type { FastifyRequest } from 'fastify';
import { errorResponses } from '../../errors';
import { DEFAULT_LIMIT } from '../../schemas';
import { respondForProposal } from '../gateway/records';
import { DecisionBody, ProposalList, ProposalListQuery, ProposalOne, ProposalParams } from './schemas';

const tags = ['agent-proposals'];

const approverOf = (request: FastifyRequest): Approver => ({
  firmId: request.credential.firmId,
  kind: request.credential.kind,
  id: request.credential.id,
  organizationIds: request.credential.organizationIds,
  requestId: request.id,
});

const DECIDERS =
  'People signed in and API keys of the firm decide; a member, and a key limited to some companies, only on the ' +
  "companies they may see (another's is 404 NOT_FOUND). No OAuth access token (an agent) decides, and the " +
  'credential that proposed never decides on its own proposal: 403 FORBIDDEN. A proposal that is not pending ' +
  '(approved, executed, failed, rejected, expired) is 409 INVALID_STATE; of two decisions at once, one wins.';

/** Agent proposals: the writes the firm's approval policy held, for people to approve or reject. */
export const agentProposalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/agent-proposals',
    {
      config: { scope: 'entries:read', organization: 'none' },
      schema: {
        tags,
        summary: 'Agent proposals waiting for, or past, a decision',
        description:
          'Newest first, across the companies this credential may see. A pending proposal past its expiry is listed ' +
          'as `expired`.',
        querystring: ProposalListQuery,
        response: { 200: ProposalList },
      },
    },
    async (request) => {
      const { limit, cursor, clientId, status, agent } = request.query;
      return app.approvals.list(approverOf(request), {
        limit: limit ?? DEFAULT_LIMIT,
        ...(cursor ? { cursor } : {}),
        ...(clientId ? { clientId } : {}),
        ...(status ? { status } : {}),
        ...(agent ? { agent } : {}),
      });
    },
  );

  app.get(
    '/agent-proposals/:id',
    {
      config: { scope: 'entries:read', organization: 'none' },
      schema: {
        tags,
        summary: 'One agent proposal',
        description: 'The request as the agent sent it, its preview, the decision and the result.',
        params: ProposalParams,
        response: { 200: ProposalOne },
      },
    },
    async (request) => ({ data: await app.approvals.get(approverOf(request), request.params.id) }),
  );

  for (const decision of ['approve', 'reject'] as const) {
    app.post(
      `/agent-proposals/:id/${decision}`,
      {
        config: { scope: 'entries:write', organization: 'none' },
        schema: {
          tags,
          summary:
            decision === 'approve' ? 'Approve an agent proposal: its write runs once' : 'Reject an agent proposal',
          description:
            (decision === 'approve'
              ? 'The write runs now, once, as the agent that proposed it (its scopes, its Idempotency-Key), after ' +
                'checking that the record has not changed since (its SyncToken) and, on the books, the period is ' +
                'open: otherwise the proposal turns `failed` with the reason and nothing is written. Answers the ' +
                'proposal, `executed` with the result or `failed`. '
              : 'Nothing is written; the agent sees `rejected` and the note. ') + DECIDERS,
          params: ProposalParams,
          body: DecisionBody,
          response: { 200: ProposalOne, ...errorResponses(409, 415) },
        },
      },
      async (request) => ({
        data: await app.approvals.decide(
          approverOf(request),
          request.params.id,
          decision,
          request.body?.note ?? null,
          respondForProposal,
        ),
      }),
    );
  }
};
