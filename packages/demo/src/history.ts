import {
  createBankAccount,
  finishReconciliation,
  insertBankTransaction,
  matchBankTransaction,
  openReconciliation,
  reclassifyBankTransaction,
  reconcileBankTransaction,
  splitBankTransaction,
} from '@firm/banking';
import type { Tx } from '@firm/db';
import { createContact, createDocument, createTaxRate } from '@firm/documents';
import {
  accountCodes,
  addDays,
  companyOfFirm,
  createAccount,
  fiscalYearStart,
  type LedgerContext,
  postTransaction,
  setBooksClosedThrough,
} from '@firm/ledger';
import { mulberry32, type Random } from './random';

/** How many months of history each demo company gets, ending with last month. */
export const HISTORY_MONTHS = 12;

/** What one demo company does: its customers and vendors, and the size of its monthly business. */
export interface CompanyProfile {
  /** Seeds the company's random figures, so its history is the same on every run. */
  seed: number;
  customers: string[];
  /** The customer who stops paying: its invoices from two, three, four and six months back stay open. */
  slowPayer: string;
  /** The revenue line of each invoice, and a second, taxed line when `taxedExtra` is set. */
  sales: { code: string; description: string; cents: number; taxed: boolean };
  taxedExtra?: { code: string; description: string; cents: number };
  supplier: { name: string; code: string; description: string; cents: number };
  utility: { name: string; cents: number };
  software: { name: string; cents: number };
  landlord: { name: string; rentCents: number };
  wagesCents: number;
  ownerContributionCents: number;
  loanCents: number;
  equipment: { description: string; cents: number };
  /**
   * Problems seeded into last month for its close checklist to find (packages/close), besides the ones every demo
   * company's last month has (its bank register not reconciled through the month end, the rows waiting for review,
   * the slow payer's invoices over 90 days past due): the same bill entered twice, and a one-off bill that makes an
   * expense account jump far above its three-month average.
   */
  closeProblems?: {
    duplicateBill: { vendor: 'software'; description: string; code: string; cents: number };
    spikeBill: { vendor: 'utility'; description: string; code: string; cents: number };
  };
}

export const DEMO_PROFILES: Record<string, CompanyProfile> = {
  'Northwind Bakery LLC': {
    seed: 0x5eed_0001,
    customers: ['Harbor Cafe', 'Maple Street Market', 'Sunrise Hotel', 'Greenleaf Catering'],
    slowPayer: 'Greenleaf Catering',
    sales: { code: '4000', description: 'Wholesale bread and pastries', cents: 520_000, taxed: true },
    supplier: { name: 'Golden Mill Flour Co.', code: '5000', description: 'Flour, butter and sugar', cents: 480_000 },
    utility: { name: 'City Power & Water', cents: 65_000 },
    software: { name: 'Register Cloud', cents: 8_900 },
    landlord: { name: 'Pier 9 Properties', rentCents: 250_000 },
    wagesCents: 950_000,
    ownerContributionCents: 4_000_000,
    loanCents: 6_000_000,
    equipment: { description: 'Deck oven', cents: 3_600_000 },
    closeProblems: {
      duplicateBill: { vendor: 'software', description: 'Card reader lease', code: '6500', cents: 14_900 },
      spikeBill: { vendor: 'utility', description: 'Emergency gas line repair', code: '6700', cents: 180_000 },
    },
  },
  'Bluebird Design Studio': {
    seed: 0x5eed_0002,
    customers: ['Acme Robotics', 'Lakeside Dental', 'Orbit Coffee Roasters', 'Northpoint Realty'],
    slowPayer: 'Northpoint Realty',
    sales: { code: '4100', description: 'Design services', cents: 600_000, taxed: false },
    taxedExtra: { code: '4000', description: 'Printed materials', cents: 45_000 },
    supplier: { name: 'Freelance Studio Collective', code: '6800', description: 'Contract design', cents: 220_000 },
    utility: { name: 'Metro Internet', cents: 18_000 },
    software: { name: 'Figma', cents: 45_000 },
    landlord: { name: 'Canal Loft Offices', rentCents: 180_000 },
    wagesCents: 1_200_000,
    ownerContributionCents: 2_500_000,
    loanCents: 3_000_000,
    equipment: { description: 'Workstations and displays', cents: 1_800_000 },
  },
};

/** Accounts the history needs that the standard chart lacks; made once, through the ledger's own account rules. */
const EXTRA_ACCOUNTS = [
  { code: '1550', name: 'Accumulated Depreciation', type: 'asset', subtype: 'fixed_asset' },
  { code: '2300', name: 'Accrued Wages', type: 'liability', subtype: 'other_current_liability' },
  { code: '6450', name: 'Depreciation Expense', type: 'expense', subtype: 'expense' },
] as const;

const SALES_TAX_BPS = 825;
const LOAN_ANNUAL_RATE = 0.06;
const LOAN_MONTHS = 60;
const DEPRECIATION_MONTHS = 60;
const BANK_FEE_CENTS = 1_500;

export interface HistorySummary {
  startDate: string;
  endDate: string;
  invoices: number;
  bills: number;
  bankTransactions: number;
  unreviewed: number;
  reconciliations: number;
  booksClosedThrough: string | null;
}

const iso = (d: Date) => d.toISOString().slice(0, 10);
const monthStart = (year: number, month: number) => iso(new Date(Date.UTC(year, month, 1)));
const lastDay = (start: string) => {
  const d = new Date(`${start}T00:00:00Z`);
  return iso(new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)));
};
const dayIn = (start: string, day: number) => {
  const end = lastDay(start);
  const wanted = `${start.slice(0, 8)}${String(day).padStart(2, '0')}`;
  return wanted > end ? end : wanted;
};
const quarterOf = (date: string) => `${date.slice(0, 4)}-Q${Math.floor((Number(date.slice(5, 7)) - 1) / 3) + 1}`;

/** The first day of each of the `HISTORY_MONTHS` months that end with the month before `now`'s. */
export function historyMonths(now: Date): string[] {
  const months: string[] = [];
  for (let i = HISTORY_MONTHS; i >= 1; i--) months.push(monthStart(now.getUTCFullYear(), now.getUTCMonth() - i));
  return months;
}

interface Step {
  date: string;
  /** Within a day: documents, then bank rows, then month-end journals, then the month's reconciliation. */
  phase: number;
  index: number;
  run: () => Promise<void>;
}

/**
 * Gives one demo company a year of books ending last month, written through the domain's own functions (documents,
 * postings, bank actions, reconciliations, the books-close rule), so every rule and rollup holds as it would for
 * books kept through the API. The figures come from the profile and a generator seeded by it: the same `now` gives
 * the same books. Runs in the caller's transaction.
 */
export async function seedHistory(
  tx: Tx,
  firmId: string,
  organizationId: string,
  profile: CompanyProfile,
  now: Date,
  options: { lastMonthFromFeed?: boolean } = {},
): Promise<HistorySummary> {
  const rand: Random = mulberry32(profile.seed);
  const months = historyMonths(now);
  const first = months[0] as string;
  const lastMonth = months[months.length - 1] as string;
  const endDate = lastDay(lastMonth);
  const ctxAt = (date: string): LedgerContext => ({
    firmId,
    actor: { kind: 'system', id: 'demo-seed' },
    now: new Date(`${date}T12:00:00.000Z`),
  });
  const setup = ctxAt(first);

  const chart = new Map((await accountCodes(tx, organizationId)).map((a) => [a.code, a.id]));
  for (const extra of EXTRA_ACCOUNTS) {
    if (!chart.has(extra.code)) chart.set(extra.code, (await createAccount(tx, setup, organizationId, extra)).id);
  }
  const account = (code: string) => {
    const id = chart.get(code);
    if (!id) throw new Error(`the demo chart has no account ${code}`);
    return id;
  };

  const contact = async (kind: 'customer' | 'vendor', name: string) =>
    (await createContact(tx, setup, organizationId, { kind, name })).id;
  const customers = new Map<string, string>();
  for (const name of profile.customers) customers.set(name, await contact('customer', name));
  const vendors = {
    supplier: await contact('vendor', profile.supplier.name),
    utility: await contact('vendor', profile.utility.name),
    software: await contact('vendor', profile.software.name),
    landlord: await contact('vendor', profile.landlord.name),
    taxAuthority: await contact('vendor', 'State Department of Revenue'),
    lender: await contact('vendor', 'First Platypus Bank'),
  };
  const taxRate = await createTaxRate(tx, setup, organizationId, {
    name: 'State sales tax',
    rateBps: SALES_TAX_BPS,
    liabilityAccountId: account('2200'),
  });
  const bank = await createBankAccount(tx, setup, organizationId, {
    accountId: account('1000'),
    institution: 'First Platypus Bank',
    mask: '0000',
  });

  const steps: Step[] = [];
  const at = (date: string, phase: number, run: () => Promise<void>) =>
    steps.push({ date, phase, index: steps.length, run });
  const summary: HistorySummary = {
    startDate: first,
    endDate,
    invoices: 0,
    bills: 0,
    bankTransactions: 0,
    unreviewed: 0,
    reconciliations: 0,
    booksClosedThrough: null,
  };

  // The bank's rows, as a feed brings them: reviewed (categorized or matched) up to last month, whose rows wait.
  const register: { id: string; date: string; amountCents: number }[] = [];
  const bankRow = (
    date: string,
    amountCents: number | (() => number),
    description: string,
    counterparty: string | null,
    review: (id: string, ctx: LedgerContext) => Promise<unknown>,
  ) =>
    at(date, 1, async () => {
      const cents = typeof amountCents === 'function' ? amountCents() : amountCents;
      if (cents === 0) return;
      // A connected feed brings last month's rows itself: the register waits for them rather than holding both.
      if (date >= lastMonth && options.lastMonthFromFeed) return;
      const ctx = ctxAt(date);
      const id = await insertBankTransaction(tx, ctx, organizationId, {
        bankAccountId: bank.id,
        date,
        amountCents: cents,
        description,
        counterparty,
        sourceType: 'aggregator_bank_feed',
        externalId: `demo-${organizationId.slice(-12)}-${register.length + 1}`,
      });
      register.push({ id, date, amountCents: cents });
      summary.bankTransactions++;
      if (date < lastMonth) await review(id, ctx);
      else summary.unreviewed++;
    });
  const categorize =
    (accountCode: string, contactId: string | null, reason: string) => (id: string, ctx: LedgerContext) =>
      reclassifyBankTransaction(tx, ctx, organizationId, id, {
        accountId: account(accountCode),
        reason,
        ...(contactId ? { contactId } : {}),
      });
  const matchTo = (doc: { id: string | null }) => (id: string, ctx: LedgerContext) =>
    matchBankTransaction(tx, ctx, organizationId, id, { documents: [{ documentId: doc.id as string }] });

  // Opening: the owner's capital, the loan and the equipment it bought.
  bankRow(
    dayIn(first, 1),
    profile.ownerContributionCents,
    "Owner's capital contribution",
    'Owner',
    categorize('3000', null, 'owner contribution'),
  );
  bankRow(
    dayIn(first, 2),
    profile.loanCents,
    'Term loan proceeds',
    'First Platypus Bank',
    categorize('2700', vendors.lender, 'loan proceeds'),
  );
  bankRow(
    dayIn(first, 6),
    -profile.equipment.cents,
    profile.equipment.description,
    'Equipment dealer',
    categorize('1500', null, 'equipment'),
  );

  const rate = LOAN_ANNUAL_RATE / 12;
  const loanPayment = Math.round((profile.loanCents * rate) / (1 - (1 + rate) ** -LOAN_MONTHS));
  let loanBalance = profile.loanCents;
  const depreciation = Math.round(profile.equipment.cents / DEPRECIATION_MONTHS);
  const taxByQuarter = new Map<string, number>();
  let invoiceNo = 1000;
  let billNo = 5000;

  months.forEach((month, m) => {
    const end = lastDay(month);
    const monthsBeforeLast = months.length - 1 - m;

    bankRow(
      dayIn(month, 1),
      -profile.landlord.rentCents,
      'Rent',
      profile.landlord.name,
      categorize('6400', vendors.landlord, 'rent'),
    );
    bankRow(
      dayIn(month, 9),
      -profile.software.cents,
      `${profile.software.name} subscription`,
      profile.software.name,
      categorize('6500', vendors.software, 'software'),
    );
    bankRow(
      dayIn(month, 28),
      -BANK_FEE_CENTS,
      'Monthly service fee',
      'First Platypus Bank',
      categorize('6100', null, 'bank fee'),
    );

    // Sales: one invoice a customer a month, net 30; the slow payer's from two, three, four and six months back
    // are never paid, so receivables age past 30, 60 and 90 days: last month's close finds the overdue invoices.
    profile.customers.forEach((name, c) => {
      const date = dayIn(month, 3 + c * 6);
      const dueDate = addDays(date, 30);
      const lines = [
        {
          accountId: account(profile.sales.code),
          description: profile.sales.description,
          unitPriceCents: rand.around(profile.sales.cents, 0.25),
          ...(profile.sales.taxed ? { taxRateId: taxRate.id } : {}),
        },
        ...(profile.taxedExtra && rand.chance(0.5)
          ? [
              {
                accountId: account(profile.taxedExtra.code),
                description: profile.taxedExtra.description,
                unitPriceCents: rand.around(profile.taxedExtra.cents, 0.3),
                taxRateId: taxRate.id,
              },
            ]
          : []),
      ];
      const number = `INV-${++invoiceNo}`;
      const invoice = { id: null as string | null, totalCents: 0 };
      at(date, 0, async () => {
        const doc = await createDocument(tx, ctxAt(date), organizationId, 'invoice', {
          contactId: customers.get(name) as string,
          date,
          dueDate,
          number,
          lines,
        });
        invoice.id = doc.id;
        invoice.totalCents = doc.totalCents;
        taxByQuarter.set(quarterOf(date), (taxByQuarter.get(quarterOf(date)) ?? 0) + doc.taxCents);
        summary.invoices++;
      });
      const unpaid = name === profile.slowPayer && [2, 3, 4, 6].includes(monthsBeforeLast);
      const paidOn = addDays(dueDate, rand.int(-12, 10));
      if (!unpaid && paidOn <= endDate) {
        bankRow(paidOn, () => invoice.totalCents, `Payment ${number}`, name, matchTo(invoice));
      }
    });

    // Purchases: the month's supplies, paid a few days before due; the utility bill, paid on its due date.
    const purchase = (
      vendor: string,
      name: string,
      code: string,
      description: string,
      cents: number,
      day: number,
      terms: number,
      early: number,
    ) => {
      const date = dayIn(month, day);
      const dueDate = addDays(date, terms);
      const number = `B-${++billNo}`;
      const amount = rand.around(cents, 0.15);
      const bill = { id: null as string | null, totalCents: 0 };
      at(date, 0, async () => {
        const doc = await createDocument(tx, ctxAt(date), organizationId, 'bill', {
          contactId: vendor,
          date,
          dueDate,
          number,
          lines: [{ accountId: account(code), description, unitPriceCents: amount }],
        });
        bill.id = doc.id;
        bill.totalCents = doc.totalCents;
        summary.bills++;
      });
      const paidOn = addDays(dueDate, -early);
      if (paidOn <= endDate) bankRow(paidOn, () => -bill.totalCents, `Bill ${number}`, name, matchTo(bill));
    };
    purchase(
      vendors.supplier,
      profile.supplier.name,
      profile.supplier.code,
      profile.supplier.description,
      profile.supplier.cents,
      4,
      30,
      rand.int(0, 5),
    );
    purchase(vendors.utility, profile.utility.name, '6700', 'Utilities', profile.utility.cents, 12, 21, 0);

    // Last month's seeded close problems (see `closeProblems`): the duplicate bill, entered on the 16th and again on
    // the 18th, and the spike, a one-off repair billed with the utilities; all due next month, so still open.
    const problems = profile.closeProblems;
    if (problems && month === lastMonth) {
      const unpaidBill = (day: number, vendor: string, line: { description: string; code: string; cents: number }) => {
        const date = dayIn(month, day);
        const number = `B-${++billNo}`;
        at(date, 0, async () => {
          await createDocument(tx, ctxAt(date), organizationId, 'bill', {
            contactId: vendor,
            date,
            dueDate: addDays(date, 30),
            number,
            lines: [{ accountId: account(line.code), description: line.description, unitPriceCents: line.cents }],
          });
          summary.bills++;
        });
      };
      unpaidBill(16, vendors[problems.duplicateBill.vendor], problems.duplicateBill);
      unpaidBill(18, vendors[problems.duplicateBill.vendor], problems.duplicateBill);
      unpaidBill(20, vendors[problems.spikeBill.vendor], problems.spikeBill);
    }

    // Payroll: wages accrued at month end (2300), paid on the 5th of the next month.
    const wages = rand.around(profile.wagesCents, 0.04);
    at(end, 2, async () => {
      await postTransaction(tx, ctxAt(end), organizationId, {
        kind: 'journal_entry',
        date: end,
        memo: `Payroll for ${month.slice(0, 7)}`,
        lines: [
          { accountId: account('6900'), debitCents: wages, description: 'Gross wages' },
          { accountId: account('2300'), creditCents: wages, description: 'Wages payable' },
        ],
      });
    });
    const payday = addDays(end, 5);
    if (payday <= endDate) bankRow(payday, -wages, 'Payroll', 'Payroll service', categorize('2300', null, 'payroll'));

    // Depreciation of the equipment, straight line.
    at(end, 2, async () => {
      await postTransaction(tx, ctxAt(end), organizationId, {
        kind: 'journal_entry',
        date: end,
        memo: `Depreciation ${month.slice(0, 7)}`,
        lines: [
          { accountId: account('6450'), debitCents: depreciation, description: profile.equipment.description },
          { accountId: account('1550'), creditCents: depreciation, description: profile.equipment.description },
        ],
      });
    });

    // The loan's monthly payment from the month after it came, split into principal and interest.
    if (m > 0) {
      const interest = Math.round(loanBalance * rate);
      const principal = loanPayment - interest;
      loanBalance -= principal;
      bankRow(dayIn(month, 15), -loanPayment, 'Loan payment', 'First Platypus Bank', (id, ctx) =>
        splitBankTransaction(tx, ctx, organizationId, id, {
          contactId: vendors.lender,
          parts: [
            { accountId: account('2700'), amountCents: principal, description: 'Principal' },
            { accountId: account('7000'), amountCents: interest, description: 'Interest' },
          ],
        }),
      );
    }

    // Sales tax: the last quarter's tax paid to the state on the 20th of the month after it ends.
    if ([1, 4, 7, 10].includes(Number(month.slice(5, 7)))) {
      const quarter = quarterOf(addDays(month, -1));
      bankRow(
        dayIn(month, 20),
        () => -(taxByQuarter.get(quarter) ?? 0),
        `Sales tax ${quarter}`,
        'State Department of Revenue',
        categorize('2200', vendors.taxAuthority, 'sales tax'),
      );
    }

    // The month's statement reconciled, except last month's, whose rows wait for review: last month's close finds
    // the register not reconciled through the month end, and its rows unreviewed.
    if (month < lastMonth) {
      at(end, 3, async () => {
        const ctx = ctxAt(end);
        const rows = register.filter((r) => r.date <= end);
        const session = await openReconciliation(tx, ctx, organizationId, {
          bankAccountId: bank.id,
          statementEndDate: end,
          statementEndingBalanceCents: rows.reduce((s, r) => s + r.amountCents, 0),
        });
        for (const row of rows.filter((r) => r.date >= month)) {
          await reconcileBankTransaction(tx, ctx, organizationId, row.id, { reconciliationId: session.id });
        }
        await finishReconciliation(tx, ctx, organizationId, session.id);
        summary.reconciliations++;
      });
    }
  });

  steps.sort((a, b) => (a.date === b.date ? a.phase - b.phase || a.index - b.index : a.date < b.date ? -1 : 1));
  for (const step of steps) await step.run();

  // The books closed through the last fiscal year end that lies in the history before last month, whose rows
  // still wait for review.
  const org = await companyOfFirm(tx, firmId, organizationId);
  const yearEnd = addDays(fiscalYearStart(lastMonth, org?.fiscalYearStartMonth ?? 1), -1);
  if (yearEnd >= first) {
    await setBooksClosedThrough(tx, ctxAt(lastMonth), organizationId, yearEnd);
    summary.booksClosedThrough = yearEnd;
  }
  return summary;
}
