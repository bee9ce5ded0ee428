import { ALL_SCOPES } from '@firm/core';
import { EMBEDDED_ENTITIES, queryFieldsOf, queryFieldTypesOf } from '@firm/platform';
import { describe, expect, it } from 'vitest';
import {
  COVERAGE,
  coverageOf,
  coverageOfShortcut,
  coverageOfTransaction,
  QUERY_FIELD_TYPES,
  SHORTCUT_LISTS,
  TRANSACTION_TYPES,
} from './coverage';

describe('coverage registry', () => {
  it('lists exactly what the embedded platform presents, with the same operations', () => {
    expect(COVERAGE.map((e) => e.entity).sort()).toEqual([...EMBEDDED_ENTITIES.keys()].sort());
    for (const e of COVERAGE)
      expect([...e.operations].sort()).toEqual([...(EMBEDDED_ENTITIES.get(e.entity)?.operations ?? [])].sort());
  });

  it('lets queries name exactly the fields the embedded platform can filter and sort by', () => {
    for (const e of COVERAGE) {
      const handler = EMBEDDED_ENTITIES.get(e.entity);
      expect(handler, e.entity).toBeDefined();
      if (handler) expect([...e.fields].sort(), e.entity).toEqual(queryFieldsOf(handler).sort());
    }
  });

  it('types each queryable field as the embedded platform compares it', () => {
    for (const e of COVERAGE) {
      const handler = EMBEDDED_ENTITIES.get(e.entity);
      const types = handler ? queryFieldTypesOf(handler) : {};
      for (const field of e.fields)
        expect({ field, type: QUERY_FIELD_TYPES[field] }).toEqual({ field, type: types[field] });
    }
  });

  it('names a scope of the one catalogue for every operation', () => {
    for (const e of COVERAGE) {
      for (const op of e.operations) expect(ALL_SCOPES).toContain(e.scopes[op]);
      expect(Object.keys(e.scopes).sort()).toEqual([...e.operations].sort());
    }
  });

  it('finds entities by name in any case, by transaction type and by shortcut', () => {
    expect(coverageOf('invoice')?.entity).toBe('Invoice');
    expect(coverageOf('JOURNALENTRY')?.entity).toBe('JournalEntry');
    expect(coverageOf('journal-entry')?.entity).toBe('JournalEntry');
    expect(coverageOf('Payroll')).toBeUndefined();
    for (const list of SHORTCUT_LISTS) expect(coverageOfShortcut(list)).toBeDefined();
    const covered = TRANSACTION_TYPES.filter((t) => coverageOfTransaction(t));
    expect(covered).toContain('purchase');
    for (const t of covered) expect(coverageOfTransaction(t)?.scopes.read).toBe('acct:transactions:read');
  });
});
