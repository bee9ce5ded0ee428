import formbody from '@fastify/formbody';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { DomainError, isUuid } from '@firm/core';
import type { Approver, ProposalView } from '@firm/gateway';
import { agentNames, consentContext, getUser, type Session } from '@firm/identity';
import { getAccount } from '@firm/ledger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { pageErrorHandler, sendErrorPage, sendPage } from '../../html';
import { csrfMatches, getSession } from '../../plugins/session';
import { respondForProposal } from '../gateway/records';
import { approvalPage, approvalsPage, type Names } from './pages';
import {
  ApprovalParams,
  ApprovalQuery,
  ApprovalResponses,
  ApprovalsQuery,
  ApprovalsResponses,
  DecisionForm,
  DecisionResponses,
} from './schemas';

const tags = ['approvals'];
const PAGE_SIZE = 25;

/** The signed-in person as an approver: their firm, and a member's companies only. */
const approverOf = (session: Session, request: FastifyRequest): Approver => ({
  firmId: session.user.firmId,
  kind: 'session',
  id: session.user.id,
  organizationIds: session.user.organizationIds,
  requestId: request.id,
});

const toSignIn = (reply: FastifyReply, back: string, code: 302 | 303) =>
  reply.redirect(`/login?return_to=${encodeURIComponent(back)}`, code);

/**
 * The approvers' pages: the agent proposals of the companies the signed-in person may see, and a form to approve or
 * reject each. Plain forms, no script; the decisions go through `app.approvals.decide` as the API's do.
 */
export const approvalPageRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  /** The names a page shows for the ids its proposals hold; an id without a name is shown as it is. */
  async function namesOf(firmId: string, views: ProposalView[]): Promise<Names> {
    const { organizations } = await consentContext(db(), firmId);
    const actorIds = views.flatMap((v) => [v.agent.clientId, ...(v.decision ? [v.decision.by.id] : [])]);
    const actors = new Map(await agentNames(db(), firmId, actorIds));
    const people = views.flatMap((v) => (v.decision?.by.kind === 'session' ? [v.decision.by.id] : []));
    for (const id of new Set(people)) {
      const user = await getUser(db(), firmId, id).catch(refusalAsNull);
      if (user) actors.set(id, user.name);
    }
    const accounts = new Map<string, string>();
    for (const view of views) {
      for (const { accountId } of view.preview.journal) {
        if (accounts.has(accountId) || !isUuid(accountId)) continue;
        // Books kept in QuickBooks Online name their own accounts: those show by id.
        const account = await getAccount(db(), view.clientId, accountId).catch(refusalAsNull);
        if (account) accounts.set(accountId, `${account.code} ${account.name}`);
      }
    }
    return { clients: new Map(organizations.map((o) => [o.id, o.name])), actors, accounts };
  }

  const detail = async (
    reply: FastifyReply,
    session: Session,
    view: ProposalView,
    options: { status?: number; done?: 'executed' | 'failed' | 'rejected' | undefined; error?: string } = {},
  ) => {
    const body = approvalPage({
      view,
      names: await namesOf(session.user.firmId, [view]),
      csrfToken: session.csrfToken,
      done: options.done,
      error: options.error,
    });
    return sendPage(reply, 'Agent proposal', body, {
      wide: true,
      ...(options.status ? { status: options.status } : {}),
    });
  };

  await app.register(async (instance) => {
    const pages = instance.withTypeProvider<TypeBoxTypeProvider>();
    await pages.register(formbody);
    pages.setErrorHandler(pageErrorHandler);

    pages.get(
      '/approvals',
      {
        schema: {
          tags,
          summary: "The approvers' page: agent proposals",
          description:
            'For a signed-in person: the agent writes the approval policy held, in the companies they may see, with ' +
            'their dry-run preview. Pending ones unless `status` says otherwise. Not signed in: to /login and back.',
          querystring: ApprovalsQuery,
          response: ApprovalsResponses,
        },
      },
      async (request, reply) => {
        const session = await getSession(request);
        if (!session) return toSignIn(reply, request.url, 302);
        const status = request.query.status ?? 'pending';
        const page = await app.approvals.list(approverOf(session, request), {
          status,
          limit: PAGE_SIZE,
          ...(request.query.cursor ? { cursor: request.query.cursor } : {}),
        });
        const names = await namesOf(session.user.firmId, page.data);
        return sendPage(
          reply,
          'Agent proposals',
          approvalsPage({ status, proposals: page.data, names, nextCursor: page.nextCursor }),
          { wide: true },
        );
      },
    );

    pages.get(
      '/approvals/:id',
      {
        schema: {
          tags,
          summary: 'One agent proposal, and the form to approve or reject it',
          description:
            'Its full preview, the request as the agent sent it, its history, and while it is pending a form whose ' +
            'buttons post to /approvals/{id}/approve and /approvals/{id}/reject. Not signed in: to /login and back.',
          params: ApprovalParams,
          querystring: ApprovalQuery,
          response: ApprovalResponses,
        },
      },
      async (request, reply) => {
        const session = await getSession(request);
        if (!session) return toSignIn(reply, request.url, 302);
        const view = await app.approvals.get(approverOf(session, request), request.params.id).catch(notFoundAsNull);
        if (!view) return notFoundPage(reply);
        return detail(reply, session, view, { done: request.query.done });
      },
    );

    for (const decision of ['approve', 'reject'] as const) {
      pages.post(
        `/approvals/:id/${decision}`,
        {
          config: { browserOrigin: 'page' },
          schema: {
            tags,
            summary: decision === 'approve' ? 'Approve an agent proposal (form)' : 'Reject an agent proposal (form)',
            description:
              'Form post of the proposal page, with the session CSRF token and an optional note. The decision is ' +
              'POST /api/v1/agent-proposals/{id}/' +
              decision +
              "'s, made as the signed-in person: a member decides only in their companies, and a refusal is a page " +
              'saying why, with its status.',
            consumes: ['application/x-www-form-urlencoded'],
            params: ApprovalParams,
            body: DecisionForm,
            response: DecisionResponses,
          },
        },
        async (request, reply) => {
          const { id } = request.params;
          const session = await getSession(request);
          if (!session) return toSignIn(reply, `/approvals/${encodeURIComponent(id)}`, 303);
          if (!csrfMatches(session, request.body.csrf_token)) {
            return sendErrorPage(
              reply,
              403,
              'Request refused',
              'The form is missing its security token. Open the page again and retry.',
            );
          }
          const approver = approverOf(session, request);
          const note = request.body.note?.trim() || null;
          try {
            const decided = await app.approvals.decide(approver, id, decision, note, respondForProposal);
            const done = decided.status === 'executed' || decided.status === 'failed' ? decided.status : 'rejected';
            return reply.redirect(`/approvals/${decided.id}?done=${done}`, 303);
          } catch (err) {
            if (!(err instanceof DomainError)) throw err;
            if (err.code === 'NOT_FOUND') return notFoundPage(reply);
            if (err.code !== 'INVALID_STATE' && err.code !== 'FORBIDDEN') throw err;
            const view = await app.approvals.get(approver, id);
            return detail(reply, session, view, {
              status: err.code === 'FORBIDDEN' ? 403 : 409,
              error:
                err.code === 'FORBIDDEN'
                  ? `You may not decide on this proposal: ${err.message}.`
                  : `Nothing was done: this proposal is already ${view.status}. Only a pending proposal is decided.`,
            });
          }
        },
      );
    }
  });
};

/** A name that cannot be read (a user gone, an account of another platform) is shown by its id; anything else throws. */
const refusalAsNull = (err: unknown): null => {
  if (err instanceof DomainError) return null;
  throw err;
};

const notFoundAsNull = (err: unknown): null => {
  if (err instanceof DomainError && err.code === 'NOT_FOUND') return null;
  throw err;
};

const notFoundPage = (reply: FastifyReply) =>
  sendErrorPage(
    reply,
    404,
    'Proposal not found',
    'No agent proposal of a client company you may see has this address. It may belong to another company.',
  );
