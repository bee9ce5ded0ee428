import type { ProposalStatus, ProposalView } from '@firm/gateway';
import { PROPOSAL_STATUSES } from '@firm/db';
import { type Html, html } from '../../html';
import type { DONE } from './schemas';

/** Names of what a proposal refers to by id, read once per page: clients, agents and deciders, accounts. */
export interface Names {
  clients: ReadonlyMap<string, string>;
  /** Agents (API keys, OAuth apps) and the people or keys that decided. */
  actors: ReadonlyMap<string, string>;
  /** Accounts of the journal lines, as "code name". */
  accounts: ReadonlyMap<string, string>;
}

const money = (amount: number): string =>
  amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** What the write moves: its journal's debits, else the record's total (a delete posts nothing). */
function amountOf(view: ProposalView): string {
  const debits = view.preview.journal.reduce((sum, line) => sum + line.debit, 0);
  if (debits !== 0) return money(debits);
  const total = view.preview.record.TotalAmt;
  return typeof total === 'number' ? money(total) : '—';
}

const when = (iso: string): string => `${iso.slice(0, 16).replace('T', ' ')} UTC`;

const label = (view: ProposalView): string =>
  `${view.operation[0]?.toUpperCase()}${view.operation.slice(1)} ${view.entity}`;

const agentName = (view: ProposalView, names: Names): string =>
  names.actors.get(view.agent.clientId) ?? view.agent.clientId;

function journalTable(view: ProposalView, names: Names): Html {
  if (view.preview.journal.length === 0) return html`<p class="muted">It posts no journal lines.</p>`;
  const rows = view.preview.journal.map(
    (line) =>
      html`<tr>
        <td>${names.accounts.get(line.accountId) ?? line.accountId}</td>
        <td>${line.description ?? ''}</td>
        <td class="num">${line.debit ? money(line.debit) : ''}</td>
        <td class="num">${line.credit ? money(line.credit) : ''}</td>
      </tr>`,
  );
  return html`<table>
    <thead>
      <tr>
        <th>Account</th>
        <th>Description</th>
        <th class="num">Debit</th>
        <th class="num">Credit</th>
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

function previewFacts(view: ProposalView): Html {
  const { syncToken, period } = view.preview;
  return html`<p class="muted">
    ${syncToken === null ? 'A new record.' : html`The record's SyncToken: <strong>${syncToken}</strong>.`} Period:
    <strong>${period.status}</strong>${period.closedThrough ? ` (books closed through ${period.closedThrough})` : ''}.
  </p>`;
}

function summary(view: ProposalView, names: Names): Html {
  return html`<dl>
    <dt>Client</dt>
    <dd>${names.clients.get(view.clientId) ?? view.clientId}</dd>
    <dt>Agent</dt>
    <dd>${agentName(view, names)}</dd>
    <dt>Amount</dt>
    <dd>${amountOf(view)}</dd>
    <dt>The agent's reason</dt>
    <dd>${view.reason ?? html`<span class="muted">none given</span>`}</dd>
    <dt>Held because</dt>
    <dd>${view.rules.join('; ')}</dd>
    <dt>Status</dt>
    <dd><span class="status">${view.status}</span></dd>
    <dt>Proposed</dt>
    <dd>${when(view.createdAt)}</dd>
    <dt>Expires</dt>
    <dd>${when(view.expiresAt)}</dd>
  </dl>`;
}

export function approvalsPage(params: {
  status: ProposalStatus;
  proposals: ProposalView[];
  names: Names;
  nextCursor: string | null;
}): Html {
  const { status, proposals, names } = params;
  const filters = PROPOSAL_STATUSES.map((s) =>
    s === status ? html`<strong>${s}</strong>` : html`<a href="/approvals?status=${s}">${s}</a>`,
  );
  const items = proposals.map(
    (view) =>
      html`<section class="proposal">
        <h2><a href="/approvals/${view.id}">${label(view)}</a></h2>
        ${summary(view, names)} ${journalTable(view, names)} ${previewFacts(view)}
      </section>`,
  );
  return html`<h1>Agent proposals</h1>
    <p class="muted">
      Writes of agents that your firm's approval policy held for a person to approve, in the client companies you may
      see.
    </p>
    <nav class="filters">Status: ${filters.map((f, i) => (i === 0 ? f : html` · ${f}`))}</nav>
    ${items.length === 0 ? html`<p>No ${status} proposals.</p>` : items}
    ${
      params.nextCursor
        ? html`<p><a href="/approvals?status=${status}&cursor=${encodeURIComponent(params.nextCursor)}">Older</a></p>`
        : ''
    }
    <p><a href="/login">Your account</a></p>`;
}

const DONE_MESSAGES: Record<(typeof DONE)[number], string> = {
  executed: 'Approved: the write ran.',
  failed: 'Approved, but the write could not run; nothing was written (see the history).',
  rejected: 'Rejected: nothing was written.',
};

function history(view: ProposalView, names: Names): Html {
  const decision = view.decision;
  const decider = decision ? (names.actors.get(decision.by.id) ?? `${decision.by.kind} ${decision.by.id}`) : '';
  return html`<ul class="history">
    <li>${when(view.createdAt)}: proposed by ${agentName(view, names)}.</li>
    ${
      decision
        ? html`<li>
            ${when(decision.at)}: ${view.status === 'rejected' ? 'rejected' : 'approved'} by
            ${decider}${decision.note ? html`, noting “${decision.note}”` : ''}.
          </li>`
        : ''
    }
    ${view.executedAt ? html`<li>${when(view.executedAt)}: the write ran (${view.result?.status}).</li>` : ''}
    ${view.failure ? html`<li class="error">The write failed: ${view.failure.reason} (${view.failure.code}).</li>` : ''}
    ${view.status === 'expired' ? html`<li>${when(view.expiresAt)}: expired without a decision.</li>` : ''}
  </ul>`;
}

export function approvalPage(params: {
  view: ProposalView;
  names: Names;
  csrfToken: string;
  /** What the form's decision did; said only while it is the proposal's status (a link cannot claim otherwise). */
  done?: (typeof DONE)[number] | undefined;
  error?: string | undefined;
}): Html {
  const { view, names } = params;
  const form =
    view.status === 'pending'
      ? html`<form method="post" action="/approvals/${view.id}/approve">
          <input type="hidden" name="csrf_token" value="${params.csrfToken}" />
          <label for="note">Note for the agent and the audit trail (optional)</label>
          <textarea id="note" name="note" maxlength="2000" rows="3"></textarea>
          <button class="primary" type="submit">Approve</button>
          <button type="submit" formaction="/approvals/${view.id}/reject">Reject</button>
        </form>`
      : '';
  return html`<p><a href="/approvals">All proposals</a></p>
    <h1>${label(view)}</h1>
    ${params.done === view.status ? html`<p class="notice" role="status">${DONE_MESSAGES[params.done]}</p>` : ''}
    ${params.error ? html`<p class="error" role="alert">${params.error}</p>` : ''} ${summary(view, names)}
    <h2>What it would do</h2>
    ${journalTable(view, names)} ${previewFacts(view)}
    <pre>${JSON.stringify(view.preview.record, null, 2)}</pre>
    <h2>The request as sent</h2>
    <p>
      <code>${view.request.method} ${view.request.path}</code>${
        view.request.idempotencyKey ? html`, Idempotency-Key <code>${view.request.idempotencyKey}</code>` : ''
      }
    </p>
    <pre>${JSON.stringify(view.request.body, null, 2)}</pre>
    <h2>History</h2>
    ${history(view, names)} ${form}`;
}
