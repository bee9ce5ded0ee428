import { PROPOSAL_STATUSES } from '@firm/db';
import { Type } from 'typebox';
import { ListQuery, PageOf } from '../../schemas';
import { Proposal } from '../gateway/schemas';

export { ProposalOne, ProposalParams } from '../gateway/schemas';

export const ProposalList = PageOf(Proposal);

export const ProposalListQuery = Type.Object({
  ...ListQuery,
  clientId: Type.Optional(Type.String({ format: 'uuid', description: "Only this client's (company's) proposals." })),
  status: Type.Optional(Type.Enum(PROPOSAL_STATUSES, { description: 'Only proposals in this status.' })),
  agent: Type.Optional(
    Type.String({ maxLength: 200, description: "Only this agent's: its OAuth client id, API key id or grant id." }),
  ),
});

export const DecisionBody = Type.Object(
  {
    note: Type.Optional(
      Type.Union([Type.String({ maxLength: 2000 }), Type.Null()], {
        description: 'Why, for the agent and the audit trail.',
      }),
    ),
  },
  { additionalProperties: false, title: 'AgentProposalDecision' },
);
