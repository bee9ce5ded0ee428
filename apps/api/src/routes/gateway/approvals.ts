import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import { getApprovalPolicy, setApprovalPolicy } from '@firm/gateway';
import { errorResponses } from '../../errors';
import { requireFirmManager } from '../context';
import { actorOf, tags } from './hooks';
import { ApprovalPolicy, ApprovalPolicyResponse, ProposalOne, ProposalParams } from './schemas';

/** The firm's default approval policy, and an agent's view of its own proposals. */
export const approvalRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  const policyOf = async (firmId: string) => {
    const firm = await getApprovalPolicy(db(), firmId, 'firm');
    return { data: { policy: firm ?? { mode: 'auto' as const }, source: firm ? 'firm' : 'default', firm } } as const;
  };

  app.get(
    '/approval-policy',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: "The firm's default approval policy for agent writes",
        description:
          'Which agent writes wait for a person: the firm default, which a client (PATCH /acct/clients/{clientId}, ' +
          '`approvalPolicy`) and an agent may override. The shipped default is `auto`: nothing waits.',
        response: { 200: ApprovalPolicyResponse },
      },
    },
    async (request) => policyOf(request.credential.firmId),
  );

  app.patch(
    '/approval-policy',
    {
      config: { scope: 'acct:clients:write', organization: 'firm', audit: 'approval-policy.update' },
      schema: {
        tags,
        summary: "Set the firm's default approval policy",
        description:
          'For firm owners and admins, signed in or through an API key of the firm that covers every organization; ' +
          'an OAuth access token (an agent) cannot change it: 403 FORBIDDEN. The body replaces the policy. An entity ' +
          'agents do not write, an unknown operation or a negative amount is 400 VALIDATION_ERROR.',
        body: ApprovalPolicy,
        response: { 200: ApprovalPolicyResponse, ...errorResponses(415) },
      },
    },
    async (request) => {
      if (request.credential.kind === 'oauth_token') {
        throw new DomainError('FORBIDDEN', 'an agent cannot change the approval policy; a firm owner or admin does');
      }
      await requireFirmManager(request, 'change what agents may do');
      await setApprovalPolicy(db(), request.credential.firmId, 'firm', '', request.body);
      return policyOf(request.credential.firmId);
    },
  );

  app.get(
    '/proposals/:id',
    {
      config: { scope: 'acct:clients:read', organization: 'none', audit: 'proposals.read' },
      schema: {
        tags,
        summary: "One of this agent's proposals",
        description:
          'A write the approval policy held (202 on the write route): its status, and once it ran, its result. ' +
          "Only the credential that proposed sees it; another's is 404 NOT_FOUND.",
        params: ProposalParams,
        response: { 200: ProposalOne },
      },
    },
    async (request) => ({ data: await app.approvals.getOwn(actorOf(request), request.params.id) }),
  );
};
