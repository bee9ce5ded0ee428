/** Account types and the subtypes each allows. Shared by the schema, the API and the seed. */
export const ACCOUNT_SUBTYPES = {
  asset: ['bank', 'accounts_receivable', 'other_current_asset', 'fixed_asset', 'other_asset'],
  liability: ['credit_card', 'accounts_payable', 'other_current_liability', 'long_term_liability'],
  equity: ['equity', 'retained_earnings'],
  income: ['income', 'other_income'],
  expense: ['cost_of_sales', 'expense', 'other_expense'],
} as const;

export type AccountType = keyof typeof ACCOUNT_SUBTYPES;
export type AccountSubtype = (typeof ACCOUNT_SUBTYPES)[AccountType][number];

export const ACCOUNT_TYPES = Object.keys(ACCOUNT_SUBTYPES) as AccountType[];
export const ACCOUNT_SUBTYPE_LIST = ACCOUNT_TYPES.flatMap((t) => [...ACCOUNT_SUBTYPES[t]]) as AccountSubtype[];

export const subtypeBelongsTo = (type: AccountType, subtype: string): boolean =>
  (ACCOUNT_SUBTYPES[type] as readonly string[]).includes(subtype);

/** The subtype used when a caller names only the type. */
export const DEFAULT_SUBTYPE: Record<AccountType, AccountSubtype> = {
  asset: 'other_current_asset',
  liability: 'other_current_liability',
  equity: 'equity',
  income: 'income',
  expense: 'expense',
};

/** Balance-sheet accounts carry balances across years; income and expense close into equity. */
export const isBalanceSheetType = (type: AccountType): boolean =>
  type === 'asset' || type === 'liability' || type === 'equity';

/**
 * The type an account code implies in the usual numbering (1 assets, 2 liabilities, 3 equity, 4 income, 5 cost of
 * sales, 6 to 9 expenses), for charts brought in from elsewhere whose rows do not say. Null when the code is not a
 * number of at least three digits, so the caller must ask for the type rather than guess.
 */
export function accountTypeFromCode(code: string): { type: AccountType; subtype: AccountSubtype } | null {
  const match = /^([1-9])\d{2,}$/.exec(code.trim());
  if (!match) return null;
  const first = Number(match[1]);
  if (first === 1) return { type: 'asset', subtype: DEFAULT_SUBTYPE.asset };
  if (first === 2) return { type: 'liability', subtype: DEFAULT_SUBTYPE.liability };
  if (first === 3) return { type: 'equity', subtype: DEFAULT_SUBTYPE.equity };
  if (first === 4) return { type: 'income', subtype: DEFAULT_SUBTYPE.income };
  if (first === 5) return { type: 'expense', subtype: 'cost_of_sales' };
  return { type: 'expense', subtype: DEFAULT_SUBTYPE.expense };
}
