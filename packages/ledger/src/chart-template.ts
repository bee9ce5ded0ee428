import type { AccountSubtype, AccountType } from '@firm/core';

/** A standard small-business chart of accounts, the starting point for a new client file. */
export const STANDARD_CHART: ReadonlyArray<{ code: string; name: string; type: AccountType; subtype: AccountSubtype }> =
  [
    { code: '1000', name: 'Business Checking', type: 'asset', subtype: 'bank' },
    { code: '1010', name: 'Business Savings', type: 'asset', subtype: 'bank' },
    { code: '1200', name: 'Accounts Receivable', type: 'asset', subtype: 'accounts_receivable' },
    { code: '1300', name: 'Prepaid Expenses', type: 'asset', subtype: 'other_current_asset' },
    { code: '1500', name: 'Equipment', type: 'asset', subtype: 'fixed_asset' },
    { code: '2000', name: 'Accounts Payable', type: 'liability', subtype: 'accounts_payable' },
    { code: '2100', name: 'Business Credit Card', type: 'liability', subtype: 'credit_card' },
    { code: '2200', name: 'Sales Tax Payable', type: 'liability', subtype: 'other_current_liability' },
    { code: '2700', name: 'Loan Payable', type: 'liability', subtype: 'long_term_liability' },
    { code: '3000', name: "Owner's Equity", type: 'equity', subtype: 'equity' },
    { code: '3100', name: "Owner's Draws", type: 'equity', subtype: 'equity' },
    { code: '3900', name: 'Retained Earnings', type: 'equity', subtype: 'retained_earnings' },
    { code: '4000', name: 'Sales', type: 'income', subtype: 'income' },
    { code: '4100', name: 'Service Revenue', type: 'income', subtype: 'income' },
    { code: '4900', name: 'Interest Income', type: 'income', subtype: 'other_income' },
    { code: '5000', name: 'Cost of Goods Sold', type: 'expense', subtype: 'cost_of_sales' },
    { code: '6000', name: 'Advertising & Marketing', type: 'expense', subtype: 'expense' },
    { code: '6100', name: 'Bank Fees', type: 'expense', subtype: 'expense' },
    { code: '6200', name: 'Meals', type: 'expense', subtype: 'expense' },
    { code: '6300', name: 'Office Supplies', type: 'expense', subtype: 'expense' },
    { code: '6400', name: 'Rent', type: 'expense', subtype: 'expense' },
    { code: '6500', name: 'Software & Subscriptions', type: 'expense', subtype: 'expense' },
    { code: '6600', name: 'Travel', type: 'expense', subtype: 'expense' },
    { code: '6700', name: 'Utilities', type: 'expense', subtype: 'expense' },
    { code: '6800', name: 'Professional Fees', type: 'expense', subtype: 'expense' },
    { code: '6900', name: 'Payroll Expenses', type: 'expense', subtype: 'expense' },
    { code: '7000', name: 'Interest Expense', type: 'expense', subtype: 'other_expense' },
  ];
