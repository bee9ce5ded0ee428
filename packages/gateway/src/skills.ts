import type { Scope } from '@firm/core';

/** One call a recipe step makes, relative to the gateway's base (`/agent/v1`). */
export interface RecipeCall {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  body?: Record<string, unknown>;
  note?: string;
}

export interface RecipeStep {
  id: string;
  title: string;
  calls: RecipeCall[];
  /** What must hold after the step: the agent checks it before going on. */
  check: string;
}

export interface Skill {
  id: string;
  version: string;
  title: string;
  summary: string;
  requiredScopes: Scope[];
  writes: boolean;
  steps: RecipeStep[];
  /** What proves the whole recipe worked. */
  checks: string[];
}

export const RECIPES_VERSION = '2026-11-28';

const C = '/acct/clients/{clientId}';

/**
 * Machine-readable recipes for the work agents do on a client's books. Each step names the gateway calls it makes
 * and the check that proves it worked; every write goes through `/transactions` or `/entities` with an
 * Idempotency-Key, and may be tried first with `dryRun=true`.
 */
export const SKILLS: readonly Skill[] = [
  {
    id: 'client-health-scan',
    version: '1.0.0',
    title: 'Client health scan',
    summary:
      'A read-only scan across every client open to the agent: stale bank accounts, uncategorized activity, ' +
      'receivables over 90 days, negative or suspense balances, drafts left open and the closed-period status.',
    requiredScopes: ['acct:clients:read', 'acct:reports:read'],
    writes: false,
    steps: [
      {
        id: 'scan',
        title: 'Run the scan',
        calls: [{ method: 'GET', path: '/skills/client-health-scan' }],
        check: 'Every finding names its client, its evidence and the call that fixes it.',
      },
    ],
    checks: ['The scan wrote nothing: the audit trail shows only reads.'],
  },
  {
    id: 'categorize-uncategorized-expenses',
    version: '1.1.0',
    title: 'Categorize uncategorized expenses',
    summary: 'Move spending booked to a suspense or uncategorized account to the expense account it belongs to.',
    requiredScopes: ['acct:entities:read', 'acct:transactions:read', 'acct:transactions:create'],
    writes: true,
    steps: [
      {
        id: 'find-suspense',
        title: 'Find the suspense and uncategorized accounts and their balances',
        calls: [
          {
            method: 'POST',
            path: `${C}/query`,
            body: { query: "SELECT * FROM Account WHERE Name LIKE '%Uncategorized%'" },
          },
          { method: 'GET', path: `${C}/reports/general-ledger`, note: 'accountId=<suspense account>' },
        ],
        check: 'Each line to move is known with its date, amount and description.',
      },
      {
        id: 'reclassify',
        title: 'Post one journal entry per line: debit the right expense, credit the suspense account',
        calls: [
          {
            method: 'POST',
            path: `${C}/transactions?dryRun=true`,
            body: { entityType: 'journal-entry', payload: { Line: '[Debit expense, Credit suspense]' } },
            note: 'then again without dryRun, with an Idempotency-Key per line',
          },
        ],
        check: 'The journal effect of the dry run moves exactly the line amount.',
      },
      {
        id: 'cite-receipt',
        title: 'Attach the receipt or invoice each entry rests on, when there is one',
        calls: [
          {
            method: 'POST',
            path: `${C}/entities/Attachable`,
            body: {
              Id: '<attachment id>',
              AttachableRef: [{ EntityRef: { type: 'JournalEntry', value: '<entry id>' } }],
            },
            note:
              'the file received first through the attach_file tool (POST /api/v1/attachments/inline); needs ' +
              'acct:entities:write. A bank row categorized through bank_reclassify, bank_match or bank_split cites ' +
              'it with attachmentIds instead, in the same transaction.',
          },
        ],
        check: 'Reading the Attachable back lists the entry in its AttachableRef; its TempDownloadUri opens the file.',
      },
    ],
    checks: ['The suspense account balance in the trial balance is zero, or what is left is explained.'],
  },
  {
    id: 'month-end-close',
    version: '1.0.0',
    title: 'Month-end close',
    summary: 'Review the month, post the adjustments, and hand the firm a trial balance that ties out.',
    requiredScopes: ['acct:transactions:read', 'acct:transactions:create', 'acct:reports:read'],
    writes: true,
    steps: [
      {
        id: 'health',
        title: 'Scan the client',
        calls: [{ method: 'GET', path: '/skills/client-health-scan' }],
        check: 'No high-severity finding is left for the client.',
      },
      {
        id: 'adjust',
        title: 'Post accruals and prepaid amortization as journal entries',
        calls: [{ method: 'POST', path: `${C}/transactions`, body: { entityType: 'journal-entry' } }],
        check: 'Each entry balances (the gateway refuses one that does not: 422 UNBALANCED_ENTRY).',
      },
      {
        id: 'tie-out',
        title: 'Pull the trial balance, balance sheet and profit and loss for the month',
        calls: [
          { method: 'GET', path: `${C}/reports/trial-balance`, note: 'end_date=<month end>' },
          { method: 'GET', path: `${C}/reports/balance-sheet`, note: 'end_date=<month end>' },
          { method: 'GET', path: `${C}/reports/profit-loss`, note: 'start_date=<month start>&end_date=<month end>' },
        ],
        check: 'Trial balance debits equal credits; assets equal liabilities plus equity.',
      },
    ],
    checks: ['A firm owner or admin closes the books (partner API PATCH /books); agents do not.'],
  },
  {
    id: 'collect-overdue-invoices',
    version: '1.0.0',
    title: 'Collect overdue invoices',
    summary: 'List open invoices past due, oldest first, with the customer to contact for each.',
    requiredScopes: ['acct:transactions:read', 'acct:entities:read'],
    writes: false,
    steps: [
      {
        id: 'overdue',
        title: 'Find open invoices past their due date',
        calls: [
          {
            method: 'POST',
            path: `${C}/query`,
            body: { query: "SELECT * FROM Invoice WHERE Balance > '0' AND DueDate < '<today>' ORDERBY DueDate" },
          },
        ],
        check: 'Every invoice listed has a positive Balance and a DueDate before today.',
      },
      {
        id: 'contacts',
        title: 'Read each customer for the reminder',
        calls: [{ method: 'GET', path: `${C}/entities/Customer/{CustomerRef.value}` }],
        check: 'Each reminder goes to the customer the invoice names.',
      },
    ],
    checks: ['The total of the list equals the past-due columns of the receivables aging.'],
  },
  {
    id: 'pay-due-bills',
    version: '1.1.0',
    title: 'Pay bills that are due',
    summary: 'List open bills due by a date, dry-run their payment for the firm to approve, then record it.',
    requiredScopes: ['acct:transactions:read', 'acct:transactions:create'],
    writes: true,
    steps: [
      {
        id: 'due',
        title: 'Find open bills due by the payment run date',
        calls: [
          {
            method: 'POST',
            path: `${C}/query`,
            body: { query: "SELECT * FROM Bill WHERE Balance > '0' AND DueDate <= '<run date>' ORDERBY DueDate" },
          },
        ],
        check: 'Every bill listed is open and due by the run date.',
      },
      {
        id: 'pay',
        title: 'Pay each approved bill from the bank account the firm names: dry run first, then for real',
        calls: [
          {
            method: 'POST',
            path: `${C}/transactions?dryRun=true`,
            body: {
              entityType: 'bill-payment',
              payload: {
                VendorRef: { value: '{VendorRef.value}' },
                PayType: 'Check',
                CheckPayment: { BankAccountRef: { value: '<bank account id>' } },
                Line: [{ Amount: '{Balance}', LinkedTxn: [{ TxnId: '{Id}', TxnType: 'Bill' }] }],
              },
            },
          },
          {
            method: 'POST',
            path: `${C}/transactions`,
            body: { note: 'the same body, with an Idempotency-Key header' },
          },
        ],
        check: 'The dry run shows the bank credited and accounts payable debited by the bill balance.',
      },
    ],
    checks: ['Each paid bill reads back with Balance 0, and the bank account register shows the payment.'],
  },
  {
    id: 'review-client-file',
    version: '1.0.0',
    title: 'Review a client file',
    summary: 'Read the company, its chart of accounts, its customers and vendors and its reports, and summarise.',
    requiredScopes: ['acct:clients:read', 'acct:entities:read', 'acct:reports:read'],
    writes: false,
    steps: [
      {
        id: 'company',
        title: 'Read the company and its chart of accounts',
        calls: [
          { method: 'GET', path: C },
          { method: 'GET', path: `${C}/chart-accounts`, note: 'maxResults=1000' },
        ],
        check: 'Every account has a type; nothing is left in suspense.',
      },
      {
        id: 'reports',
        title: 'Pull the balance sheet and profit and loss',
        calls: [
          { method: 'GET', path: `${C}/reports/balance-sheet` },
          { method: 'GET', path: `${C}/reports/profit-loss` },
        ],
        check: 'Assets equal liabilities plus equity.',
      },
    ],
    checks: ['The summary quotes only figures the reports returned.'],
  },
];

export const skillOf = (id: string): Skill | undefined => SKILLS.find((s) => s.id === id);
