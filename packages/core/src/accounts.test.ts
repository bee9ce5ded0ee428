import { describe, expect, it } from 'vitest';
import { accountTypeFromCode } from './accounts';

describe('accountTypeFromCode', () => {
  it('reads the usual numbering', () => {
    expect(accountTypeFromCode('1000')).toEqual({ type: 'asset', subtype: 'other_current_asset' });
    expect(accountTypeFromCode('2150')).toEqual({ type: 'liability', subtype: 'other_current_liability' });
    expect(accountTypeFromCode('3900')?.type).toBe('equity');
    expect(accountTypeFromCode('4100')?.type).toBe('income');
    expect(accountTypeFromCode('5000')).toEqual({ type: 'expense', subtype: 'cost_of_sales' });
    expect(accountTypeFromCode(' 6450 ')).toEqual({ type: 'expense', subtype: 'expense' });
    expect(accountTypeFromCode('91000')?.type).toBe('expense');
  });

  it('will not guess from anything else', () => {
    for (const code of ['', '0100', '12', 'A100', '1000-01', 'Cash']) expect(accountTypeFromCode(code)).toBeNull();
  });
});
