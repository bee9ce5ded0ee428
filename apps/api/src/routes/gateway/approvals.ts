import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import { getApprovalPolicy, setApprovalPolicy } from '@firm/gateway';
import { isAgentOfFirm } from '@firm/identity';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../../errors';
import { DataOf } from '../../schemas';
import { requireFirmManager } from '../context';
import { actorOf, tags } from './hooks';
import { ApprovalPolicy, ApprovalPolicyResponse, ProposalOne, ProposalParams } from './schemas';

const AgentParams = Type.Object({
  agentId: Type.String({
    description: "The agent: an OAuth client id (a proposal's agent.clientId) or an API key id.",
  }),
});

const AgentPolicyResponse = DataOf(
  Type.Object(
    {
      agentId: Type.String(),
      policy: Type.Union([ApprovalPolicy, Type.Null()], { description: 'Null: none of its own.' }),
    },
    { title: 'AgentOwnApprovalPolicy' },
  ),
);

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

  const manager = async (request: FastifyRequest) => {
    if (request.credential.kind === 'oauth_token') {
      throw new DomainError('FORBIDDEN', 'an agent cannot change the approval policy; a firm owner or admin does');
    }
    await requireFirmManager(request, 'change what agents may do');
  };
  const agentOf = async (firmId: string, agentId: string) => {
    if (!(await isAgentOfFirm(db(), firmId, agentId))) throw new DomainError('NOT_FOUND', 'no such agent of the firm');
  };

  app.get(
    '/approval-policy/agents/:agentId',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: "An agent's own approval policy",
        description:
          "An agent's own policy wins over its client's and the firm's, for every client. Unknown agents: 404.",
        params: AgentParams,
        response: { 200: AgentPolicyResponse },
      },
    },
    async (request) => {
      await agentOf(request.credential.firmId, request.params.agentId);
      const policy = await getApprovalPolicy(db(), request.credential.firmId, 'agent', request.params.agentId);
      return { data: { agentId: request.params.agentId, policy } };
    },
  );

  app.put(
    '/approval-policy/agents/:agentId',
    {
      config: { scope: 'acct:clients:write', organization: 'firm', audit: 'approval-policy.update' },
      schema: {
        tags,
        summary: "Set or remove an agent's own approval policy",
        description:
          'As PATCH /approval-policy, for one agent (an OAuth client the firm connected, or an API key of the firm); ' +
          'null removes it. An agent cannot set its own: 403 FORBIDDEN.',
        params: AgentParams,
        body: Type.Union([ApprovalPolicy, Type.Null()]),
        response: { 200: AgentPolicyResponse, ...errorResponses(415) },
      },
    },
    async (request) => {
      await manager(request);
      await agentOf(request.credential.firmId, request.params.agentId);
      const policy = await setApprovalPolicy(
        db(),
        request.credential.firmId,
        'agent',
        request.params.agentId,
        request.body,
      );
      return { data: { agentId: request.params.agentId, policy } };
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
