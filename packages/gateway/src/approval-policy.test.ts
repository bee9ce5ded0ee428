import { DomainError } from '@firm/core';
import { describe, expect, it } from 'vitest';
import {
  type ApprovalPolicy,
  approvalReasons,
  amountCentsOf,
  checkApprovalPolicy,
  type WriteFacts,
} from './approval-policy';

const bill = (overrides: Partial<WriteFacts> = {}): WriteFacts => ({
  entity: 'Bill',
  operation: 'create',
  journal: [
    { accountId: 'a', debit: 15000, credit: 0, description: null },
    { accountId: 'b', debit: 0, credit: 15000, description: null },
  ],
  payload: { TxnDate: '2026-03-01' },
  record: null,
  closedThrough: null,
  ...overrides,
});

const codeAndFields = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError)
      return { code: err.code, fields: err.details?.map((d) => (d as { field: string }).field) };
    throw err;
  }
  return null;
};

describe('approvalReasons', () => {
  it('holds nothing under auto', () => {
    expect(approvalReasons({ mode: 'auto', amountOverCents: 0 }, bill())).toEqual([]);
  });

  it('holds every write under approval with no rules', () => {
    expect(approvalReasons({ mode: 'approval' }, bill())).toEqual(['every agent write needs approval']);
  });

  it('holds an amount over the threshold from the journal preview, not one at or under it', () => {
    expect(approvalReasons({ mode: 'approval', amountOverCents: 1_000_000 }, bill())).toEqual([
      'the amount 15,000.00 is over 10,000.00',
    ]);
    expect(approvalReasons({ mode: 'approval', amountOverCents: 1_500_000 }, bill())).toEqual([]);
  });

  it('reads TotalAmt when the write posts no journal', () => {
    const estimate = bill({ entity: 'Estimate', journal: [], payload: { TotalAmt: '200.50' } });
    expect(amountCentsOf(estimate)).toBe(20050);
    expect(approvalReasons({ mode: 'approval', amountOverCents: 20000 }, estimate)).toHaveLength(1);
    expect(amountCentsOf(bill({ journal: [], payload: {} }))).toBeNull();
  });

  it('holds by entity type and by operation', () => {
    const policy: ApprovalPolicy = { mode: 'approval', entityTypes: ['Invoice'], operations: ['delete'] };
    expect(approvalReasons(policy, bill())).toEqual([]);
    expect(approvalReasons(policy, bill({ entity: 'Invoice' }))).toEqual(['writes to Invoice need approval']);
    expect(approvalReasons(policy, bill({ operation: 'delete' }))).toEqual(['delete needs approval']);
  });

  it('holds dates before the cut-off and in a closed period', () => {
    expect(approvalReasons({ mode: 'approval', datesBefore: '2026-04-01' }, bill())).toHaveLength(1);
    expect(approvalReasons({ mode: 'approval', datesBefore: '2026-03-01' }, bill())).toEqual([]);
    const closed: ApprovalPolicy = { mode: 'approval', closedPeriod: true };
    expect(approvalReasons(closed, bill({ closedThrough: '2026-03-31' }))).toEqual([
      'dated 2026-03-01, in a period closed through 2026-03-31',
    ]);
    expect(approvalReasons(closed, bill({ closedThrough: '2026-02-28' }))).toEqual([]);
    expect(approvalReasons(closed, bill())).toEqual([]);
    // the record's date when the payload has none (a sparse update)
    expect(
      approvalReasons(closed, bill({ payload: {}, record: { TxnDate: '2026-01-05' }, closedThrough: '2026-01-31' })),
    ).toHaveLength(1);
  });

  it('holds new customers and vendors, not their updates', () => {
    const policy: ApprovalPolicy = { mode: 'approval', newContacts: true };
    expect(approvalReasons(policy, bill({ entity: 'Vendor', journal: [] }))).toEqual(['a new vendor needs approval']);
    expect(approvalReasons(policy, bill({ entity: 'Customer', operation: 'update', journal: [] }))).toEqual([]);
    expect(approvalReasons(policy, bill())).toEqual([]);
  });
});

describe('checkApprovalPolicy', () => {
  it('answers entity types in the coverage spelling, without repeats', () => {
    expect(checkApprovalPolicy({ mode: 'approval', entityTypes: ['bill', 'Bill', 'vendor'] })).toEqual({
      mode: 'approval',
      entityTypes: ['Bill', 'Vendor'],
    });
  });

  it('refuses unknown entity types and operations, negative or fractional amounts, bad dates and expiries', () => {
    const bad = (policy: object) => codeAndFields(() => checkApprovalPolicy(policy as ApprovalPolicy));
    expect(bad({ mode: 'approval', entityTypes: ['Spaceship'] })).toEqual({
      code: 'VALIDATION_ERROR',
      fields: ['entityTypes'],
    });
    expect(bad({ mode: 'approval', operations: ['void'] })).toEqual({
      code: 'VALIDATION_ERROR',
      fields: ['operations'],
    });
    expect(bad({ mode: 'approval', amountOverCents: -1 })).toEqual({
      code: 'VALIDATION_ERROR',
      fields: ['amountOverCents'],
    });
    expect(bad({ mode: 'approval', amountOverCents: 1.5 })).toEqual({
      code: 'VALIDATION_ERROR',
      fields: ['amountOverCents'],
    });
    expect(bad({ mode: 'approval', datesBefore: '2026-13-45' })).toEqual({
      code: 'VALIDATION_ERROR',
      fields: ['datesBefore'],
    });
    expect(bad({ mode: 'approval', expiresInHours: 0 })).toEqual({
      code: 'VALIDATION_ERROR',
      fields: ['expiresInHours'],
    });
    expect(bad({ mode: 'sometimes' })).toEqual({ code: 'VALIDATION_ERROR', fields: ['mode'] });
    expect(bad({ mode: 'approval', amountOverCents: -5, operations: ['void'] })?.fields).toEqual([
      'operations',
      'amountOverCents',
    ]);
  });
});
