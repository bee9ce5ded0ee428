import { DomainError } from '@firm/core';
import type { JournalEffectLine } from '@firm/platform';
import { COVERAGE, coverageOf } from './coverage';

export const APPROVAL_OPERATIONS = ['create', 'update', 'delete'] as const;
export type ApprovalOperation = (typeof APPROVAL_OPERATIONS)[number];

/** How long a proposal waits for a decision when the policy does not say: 7 days. */
export const DEFAULT_PROPOSAL_HOURS = 168;

/**
 * Which of an agent's writes wait for a person. `auto`: none. `approval`: a write that matches any of the rules
 * given; with no rule given, every write.
 */
export interface ApprovalPolicy {
  mode: 'auto' | 'approval';
  /** Writes to these entities (coverage names, `Bill`). */
  entityTypes?: string[];
  /** Writes of these operations (a delete voids a transaction). */
  operations?: ApprovalOperation[];
  /** Writes whose amount is over this many cents: the preview's total debits, else the payload's TotalAmt. */
  amountOverCents?: number;
  /** Writes dated before this day (YYYY-MM-DD). */
  datesBefore?: string;
  /** Writes dated in a closed period (on or before the books' closing date). */
  closedPeriod?: boolean;
  /** New contacts: a Customer or Vendor created. */
  newContacts?: boolean;
  /** Hours a proposal waits for a decision before it expires (1 to 720; 168 by default). */
  expiresInHours?: number;
}

/** A policy as sent, before `checkApprovalPolicy`: its operations not yet known to be operations. */
export type ApprovalPolicyInput = {
  [K in keyof ApprovalPolicy]?: K extends 'operations' ? string[] : ApprovalPolicy[K] | undefined;
} & {
  mode: ApprovalPolicy['mode'];
};

/** The shipped default of every firm: writes run without approval. */
export const AUTO_POLICY: ApprovalPolicy = { mode: 'auto' };

/** What a write would do, as the policy judges it. */
export interface WriteFacts {
  entity: string;
  operation: ApprovalOperation;
  /** The dry run's journal lines (empty for records that post nothing). */
  journal: readonly JournalEffectLine[];
  /** The payload as sent and the record as the dry run left it: where TotalAmt and TxnDate are read. */
  payload: Record<string, unknown>;
  record: Record<string, unknown> | null;
  /** The books' closing date (YYYY-MM-DD), or null when no period is closed. */
  closedThrough: string | null;
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const CONTACTS = new Set(['Customer', 'Vendor']);

/**
 * A policy as sent, checked: unknown entity types and operations, negative or fractional amounts, malformed dates
 * are VALIDATION_ERROR, every bad field named. Entity types are answered in the coverage's spelling.
 */
export function checkApprovalPolicy(input: ApprovalPolicyInput): ApprovalPolicy {
  const details: { field: string; message: string }[] = [];
  const out: ApprovalPolicy = { mode: input.mode };
  if (input.mode !== 'auto' && input.mode !== 'approval') {
    details.push({ field: 'mode', message: 'is auto or approval' });
  }
  if (input.entityTypes !== undefined) {
    const names: string[] = [];
    for (const name of input.entityTypes) {
      const entry = coverageOf(name);
      if (!entry || !entry.operations.some((o) => o !== 'read')) {
        details.push({ field: 'entityTypes', message: `${name} is not an entity agents write (GET /acct/coverage)` });
      } else if (!names.includes(entry.entity)) names.push(entry.entity);
    }
    out.entityTypes = names;
  }
  if (input.operations !== undefined) {
    for (const op of input.operations) {
      if (!(APPROVAL_OPERATIONS as readonly string[]).includes(op)) {
        details.push({ field: 'operations', message: `${String(op)} is not one of create, update, delete` });
      }
    }
    out.operations = [...new Set(input.operations)] as ApprovalOperation[];
  }
  if (input.amountOverCents !== undefined) {
    if (!Number.isSafeInteger(input.amountOverCents) || input.amountOverCents < 0) {
      details.push({ field: 'amountOverCents', message: 'is a whole number of cents, 0 or more' });
    }
    out.amountOverCents = input.amountOverCents;
  }
  if (input.datesBefore !== undefined) {
    if (!ISO_DATE.test(input.datesBefore) || Number.isNaN(Date.parse(`${input.datesBefore}T00:00:00Z`))) {
      details.push({ field: 'datesBefore', message: 'is a date, YYYY-MM-DD' });
    }
    out.datesBefore = input.datesBefore;
  }
  if (input.closedPeriod !== undefined) out.closedPeriod = input.closedPeriod;
  if (input.newContacts !== undefined) out.newContacts = input.newContacts;
  if (input.expiresInHours !== undefined) {
    if (!Number.isInteger(input.expiresInHours) || input.expiresInHours < 1 || input.expiresInHours > 720) {
      details.push({ field: 'expiresInHours', message: 'is a whole number of hours from 1 to 720' });
    }
    out.expiresInHours = input.expiresInHours;
  }
  if (details.length > 0) throw new DomainError('VALIDATION_ERROR', 'the approval policy is not valid', details);
  return out;
}

/** The write's amount in cents: the preview's total debits, else the payload's (or record's) TotalAmt. */
export function amountCentsOf(facts: Pick<WriteFacts, 'journal' | 'payload' | 'record'>): number | null {
  const debits = facts.journal.reduce((sum, line) => sum + Math.round(Number(line.debit) * 100), 0);
  if (debits > 0) return debits;
  const total = facts.payload.TotalAmt ?? facts.record?.TotalAmt;
  const n = typeof total === 'string' ? Number(total) : total;
  return typeof n === 'number' && Number.isFinite(n) ? Math.round(Math.abs(n) * 100) : null;
}

/** The write's date: the payload's TxnDate, else the record's. */
const dateOf = (facts: WriteFacts): string | null => {
  const value = facts.payload.TxnDate ?? facts.record?.TxnDate;
  return typeof value === 'string' && ISO_DATE.test(value.slice(0, 10)) ? value.slice(0, 10) : null;
};

/**
 * The rules of the policy that hold a write, as sentences for the approver and the agent: none, the write runs.
 */
export function approvalReasons(policy: ApprovalPolicy, facts: WriteFacts): string[] {
  if (policy.mode === 'auto') return [];
  const reasons: string[] = [];
  const rules = [
    policy.entityTypes,
    policy.operations,
    policy.amountOverCents,
    policy.datesBefore,
    policy.closedPeriod,
    policy.newContacts,
  ];
  if (rules.every((r) => r === undefined)) return ['every agent write needs approval'];
  if (policy.entityTypes?.includes(coverageOf(facts.entity)?.entity ?? facts.entity)) {
    reasons.push(`writes to ${facts.entity} need approval`);
  }
  if (policy.operations?.includes(facts.operation)) reasons.push(`${facts.operation} needs approval`);
  if (policy.amountOverCents !== undefined) {
    const cents = amountCentsOf(facts);
    if (cents !== null && cents > policy.amountOverCents) {
      reasons.push(`the amount ${money(cents)} is over ${money(policy.amountOverCents)}`);
    }
  }
  const date = dateOf(facts);
  if (policy.datesBefore !== undefined && date !== null && date < policy.datesBefore) {
    reasons.push(`dated ${date}, before ${policy.datesBefore}`);
  }
  if (policy.closedPeriod && date !== null && facts.closedThrough !== null && date <= facts.closedThrough) {
    reasons.push(`dated ${date}, in a period closed through ${facts.closedThrough}`);
  }
  if (policy.newContacts && facts.operation === 'create' && CONTACTS.has(facts.entity)) {
    reasons.push(`a new ${facts.entity.toLowerCase()} needs approval`);
  }
  return reasons;
}

const money = (cents: number) =>
  `${cents < 0 ? '-' : ''}${Math.floor(Math.abs(cents) / 100).toLocaleString('en-US')}.${String(Math.abs(cents) % 100).padStart(2, '0')}`;

/** The entity types a policy may name: every covered entity agents can write. */
export const WRITABLE_ENTITIES = COVERAGE.filter((e) => e.operations.some((o) => o !== 'read')).map((e) => e.entity);
