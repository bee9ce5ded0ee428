import { createHash } from 'node:crypto';
import { reconciliationStatus } from '@firm/banking';
import type { Executor } from '@firm/db';

export type Severity = 'blocking' | 'advisory';

/** What a checklist item points at: the records that are its evidence. */
export interface EvidenceRef {
  type: string;
  id: string;
}

/** One problem the books show for a close's period, computed again on every read. */
export interface ChecklistItem {
  /** Stable while the same problem holds: its rule and its evidence ids. A sign-off is kept under it. */
  key: string;
  kind: string;
  severity: Severity;
  message: string;
  evidence: EvidenceRef[];
}

/** The period a checklist is computed for. */
export interface ClosePeriod {
  firmId: string;
  organizationId: string;
  periodStart: string;
  periodEnd: string;
}

/** A rule of the checklist: its kind, its severity and what it finds. */
export interface CloseRule {
  kind: string;
  severity: Severity;
  title: string;
  description: string;
  find: (db: Executor, period: ClosePeriod) => Promise<Omit<ChecklistItem, 'key' | 'kind' | 'severity'>[]>;
}

/** An item's key: its kind and a digest of its evidence ids, in a fixed order. */
export function itemKey(kind: string, evidence: EvidenceRef[]): string {
  const ids = evidence.map((e) => `${e.type}:${e.id}`).sort();
  return `${kind}:${createHash('sha256').update(ids.join('\n')).digest('hex').slice(0, 32)}`;
}

/** The rules, in the order their items are listed. */
export const CLOSE_RULES: CloseRule[] = [
  {
    kind: 'bank_account_unreconciled',
    severity: 'blocking',
    title: 'Bank and card accounts reconciled through the period end',
    description: 'A bank or card account whose last finished reconciliation ends before the period end.',
    async find(db, period) {
      const rows = await reconciliationStatus(db, period.organizationId, period.periodEnd);
      return rows
        .filter((r) => r.lastReconciledDate === null || r.lastReconciledDate < period.periodEnd)
        .map((r) => ({
          message:
            r.lastReconciledDate === null
              ? `${r.name} has never been reconciled`
              : `${r.name} is reconciled through ${r.lastReconciledDate}, not through ${period.periodEnd}`,
          evidence: [{ type: 'BankAccount', id: r.bankAccountId }],
        }));
    },
  },
  {
    kind: 'bank_rows_unreviewed',
    severity: 'blocking',
    title: 'Bank rows reviewed',
    description: 'A bank or card account with rows up to the period end that nobody has reviewed yet.',
    async find(db, period) {
      const rows = await reconciliationStatus(db, period.organizationId, period.periodEnd);
      return rows
        .filter((r) => r.unreviewedCount > 0)
        .map((r) => ({
          message: `${r.name} has ${r.unreviewedCount} unreviewed row${r.unreviewedCount === 1 ? '' : 's'}`,
          evidence: [{ type: 'BankAccount', id: r.bankAccountId }],
        }));
    },
  },
];

/** The checklist of a period: every rule's items, each with its key. */
export async function computeChecklist(db: Executor, period: ClosePeriod): Promise<ChecklistItem[]> {
  const items: ChecklistItem[] = [];
  for (const rule of CLOSE_RULES) {
    for (const found of await rule.find(db, period)) {
      items.push({ key: itemKey(rule.kind, found.evidence), kind: rule.kind, severity: rule.severity, ...found });
    }
  }
  return items;
}
