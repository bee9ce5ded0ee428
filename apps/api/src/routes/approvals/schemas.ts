import { PROPOSAL_STATUSES } from '@firm/db';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { HtmlPage, Redirect } from '../../html';

export const ApprovalsQuery = Type.Object({
  status: Type.Optional(
    Type.Enum(PROPOSAL_STATUSES, { description: 'Only proposals in this status; `pending` when left out.' }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'The page after the one that linked here.' })),
});

/** The API's own (the router bounds its length), so the document names it once. */
export { ProposalParams as ApprovalParams } from '../gateway/schemas';

/** What the decision did, said once on the page the form's post goes back to. */
export const DONE = ['executed', 'failed', 'rejected'] as const;

export const ApprovalQuery = Type.Object({
  done: Type.Optional(Type.Enum(DONE, { description: 'Set by the decision form: what the decision did.' })),
});

export const DecisionForm = Type.Object({
  csrf_token: Type.Optional(Type.String({ maxLength: 200, description: 'The session CSRF token of the form.' })),
  note: Type.Optional(Type.String({ maxLength: 2000, description: 'Why, for the agent and the audit trail.' })),
});

const pageErrors = {
  400: HtmlPage('The form or the address is malformed.'),
  500: HtmlPage('Unexpected error.'),
  ...errorResponses(429),
};

const toSignIn = Redirect('Not signed in: to /login, and back here after.');

export const ApprovalsResponses = {
  200: HtmlPage('The proposals in the status asked for, newest first.'),
  302: toSignIn,
  ...pageErrors,
};

export const ApprovalResponses = {
  200: HtmlPage('The proposal: preview, request, history, and the decision form while it is pending.'),
  302: toSignIn,
  404: HtmlPage('No proposal of a company the user may see has this id.'),
  ...pageErrors,
};

export const DecisionResponses = {
  303: Redirect('Decided: to the proposal page, saying what the decision did. Not signed in: to /login.'),
  403: HtmlPage(
    "The CSRF token is missing or wrong, the Origin or Host is not this service's (ALLOWED_ORIGINS), or the user " +
      'may not decide on it.',
  ),
  404: HtmlPage('No proposal of a company the user may see has this id.'),
  409: HtmlPage('The proposal is no longer pending (decided, executed, failed or expired): the page says so.'),
  ...pageErrors,
};
