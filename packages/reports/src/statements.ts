import type { AgingReport } from '@firm/documents';
import type {
  BalanceSheet,
  CashFlowStatement,
  GeneralLedgerReader,
  ProfitAndLoss,
  ReportAccount,
  TrendMonth,
  TrialBalance,
} from '@firm/ledger';
import { type Chart, cashChart, profitChart } from './charts';

/**
 * A report laid out as a statement, whatever the output: columns, and rows that are headings, lines, subtotals (the
 * sum of the lines since their heading) or totals (a signed sum of other rows). PDF, XLSX and CSV are drawn from it,
 * so the three say the same; XLSX writes subtotals and totals as formulas over the rows they add.
 */
export interface Column {
  title: string;
  kind: 'text' | 'money' | 'date';
}

export interface Row {
  kind: 'heading' | 'line' | 'subtotal' | 'total';
  /** Text and date cells as text, money in cents, null for an empty cell. */
  cells: (string | number | null)[];
  indent: number;
  /** Subtotals: the first and last line they add (row indexes); totals: the rows they add, with their sign. */
  sum?: { from: number; to: number } | { rows: { row: number; sign: 1 | -1 }[] };
}

interface StatementHead {
  title: string;
  /** The period or date, as the heading says it. */
  subtitle: string;
  columns: Column[];
  /**
   * Charts of the statement's figures: the PDF draws them on one page before its rows (two fit it); CSV and XLSX have
   * the rows.
   */
  charts?: Chart[];
}

/**
 * Rows in memory, or rows read while the statement is drawn (the general ledger, a page of lines at a time), whose
 * kinds are known beforehand so that a PDF can number its pages "n of N" from the first one.
 */
export type Statement = StatementHead &
  ({ rows: Row[] } | { rows: AsyncIterable<Row>; kinds: () => Iterable<Row['kind']> });

/** The kinds of a statement's rows, in order, without reading streamed rows. */
export const kindsOf = (s: Statement): Iterable<Row['kind']> =>
  Array.isArray(s.rows) ? s.rows.map((r) => r.kind) : (s as { kinds: () => Iterable<Row['kind']> }).kinds();

/** Builds rows, remembering where each section's lines start so its subtotal can name them. */
class Rows {
  readonly rows: Row[] = [];
  private sectionStart = 0;
  constructor(private readonly width: number) {}

  heading(label: string, indent = 0): void {
    this.rows.push({ kind: 'heading', cells: [label, ...Array(this.width - 1).fill(null)], indent });
    this.sectionStart = this.rows.length;
  }
  line(cells: (string | number | null)[], indent = 1): number {
    this.rows.push({ kind: 'line', cells, indent });
    return this.rows.length - 1;
  }
  /** The sum of the lines since the last heading. */
  subtotal(label: string, values: (number | null)[]): number {
    const from = this.sectionStart;
    const to = this.rows.length - 1;
    this.rows.push({
      kind: 'subtotal',
      cells: [label, ...values],
      indent: 0,
      ...(to >= from ? { sum: { from, to } } : {}),
    });
    return this.rows.length - 1;
  }
  total(label: string, values: (number | null)[], rows: { row: number; sign: 1 | -1 }[]): number {
    this.rows.push({ kind: 'total', cells: [label, ...values], indent: 0, sum: { rows } });
    return this.rows.length - 1;
  }
}

const label = (a: ReportAccount) => `${a.code} ${a.name}`;
const money = (title: string): Column => ({ title, kind: 'money' });
const ACCOUNT: Column = { title: 'Account', kind: 'text' };

export function trialBalanceStatement(tb: TrialBalance, company: string): Statement {
  const r = new Rows(3);
  r.heading('Accounts');
  for (const row of tb.rows) r.line([label(row), row.debitCents, row.creditCents]);
  r.subtotal('Total', [tb.totalDebitCents, tb.totalCreditCents]);
  return {
    title: `${company}: Trial balance`,
    subtitle: tb.startDate ? `${tb.startDate} to ${tb.endDate}` : `Through ${tb.endDate}`,
    columns: [ACCOUNT, money('Debit'), money('Credit')],
    rows: r.rows,
  };
}

/** Accounts of several reports, merged by account in code order: one column per report. */
function merged<T extends ReportAccount>(lists: T[][], value: (row: T) => number) {
  const byId = new Map<string, { account: T; values: (number | null)[] }>();
  lists.forEach((list, i) => {
    for (const row of list) {
      const entry = byId.get(row.accountId) ?? { account: row, values: lists.map(() => 0) };
      entry.values[i] = value(row);
      byId.set(row.accountId, entry);
    }
  });
  return [...byId.values()].sort((a, b) => a.account.code.localeCompare(b.account.code));
}

/** Profit and loss, with one column per report given (current, prior period, prior year). */
export function profitAndLossStatement(
  reports: { title: string; report: ProfitAndLoss }[],
  company: string,
): Statement {
  const r = new Rows(reports.length + 1);
  const section = (heading: string, pick: (p: ProfitAndLoss) => ProfitAndLoss['income']) => {
    r.heading(heading);
    for (const m of merged(
      reports.map((x) => pick(x.report).accounts),
      (a) => a.amountCents,
    ))
      r.line([label(m.account), ...m.values]);
    return r.subtotal(
      `Total ${heading.toLowerCase()}`,
      reports.map((x) => pick(x.report).totalCents),
    );
  };
  const income = section('Income', (p) => p.income);
  const cos = section('Cost of sales', (p) => p.costOfSales);
  const gross = r.total(
    'Gross profit',
    reports.map((x) => x.report.grossProfitCents),
    [
      { row: income, sign: 1 },
      { row: cos, sign: -1 },
    ],
  );
  const expenses = section('Expenses', (p) => p.expenses);
  const otherIncome = section('Other income', (p) => p.otherIncome);
  const otherExpenses = section('Other expenses', (p) => p.otherExpenses);
  r.total(
    'Net income',
    reports.map((x) => x.report.netIncomeCents),
    [
      { row: gross, sign: 1 },
      { row: expenses, sign: -1 },
      { row: otherIncome, sign: 1 },
      { row: otherExpenses, sign: -1 },
    ],
  );
  const first = reports[0]?.report as ProfitAndLoss;
  return {
    title: `${company}: Profit and loss`,
    subtitle: `${first.startDate} to ${first.endDate}`,
    columns: [ACCOUNT, ...reports.map((x) => money(x.title))],
    rows: r.rows,
  };
}

/** The balance sheet, with one column per date given. */
export function balanceSheetStatement(reports: { title: string; report: BalanceSheet }[], company: string): Statement {
  const r = new Rows(reports.length + 1);
  const section = (heading: string, pick: (b: BalanceSheet) => BalanceSheet['assets'], extra?: () => void) => {
    r.heading(heading);
    for (const m of merged(
      reports.map((x) => pick(x.report).accounts),
      (a) => a.balanceCents,
    ))
      r.line([label(m.account), ...m.values]);
    extra?.();
    return r.subtotal(
      `Total ${heading.toLowerCase()}`,
      reports.map((x) => pick(x.report).totalCents),
    );
  };
  section('Assets', (b) => b.assets);
  const liabilities = section('Liabilities', (b) => b.liabilities);
  const equity = section(
    'Equity',
    (b) => b.equity,
    () => {
      r.line(['Retained earnings', ...reports.map((x) => x.report.equity.retainedEarningsCents)]);
      r.line(['Current-year earnings', ...reports.map((x) => x.report.equity.currentYearEarningsCents)]);
    },
  );
  r.total(
    'Total liabilities and equity',
    reports.map((x) => x.report.totalLiabilitiesAndEquityCents),
    [
      { row: liabilities, sign: 1 },
      { row: equity, sign: 1 },
    ],
  );
  return {
    title: `${company}: Balance sheet`,
    subtitle: `As of ${reports.map((x) => x.report.asOf).join(', ')}`,
    columns: [ACCOUNT, ...reports.map((x) => money(x.title))],
    rows: r.rows,
  };
}

export function cashFlowStatementOf(cf: CashFlowStatement, company: string): Statement {
  const r = new Rows(2);
  r.heading('Operating activities');
  r.line(['Net income', cf.operating.netIncomeCents]);
  for (const l of cf.operating.lines) r.line([`Change in ${label(l)}`, l.amountCents]);
  const operating = r.subtotal('Net cash from operating activities', [cf.operating.totalCents]);
  r.heading('Investing activities');
  for (const l of cf.investing.lines) r.line([`Change in ${label(l)}`, l.amountCents]);
  const investing = r.subtotal('Net cash from investing activities', [cf.investing.totalCents]);
  r.heading('Financing activities');
  for (const l of cf.financing.lines) r.line([`Change in ${label(l)}`, l.amountCents]);
  const financing = r.subtotal('Net cash from financing activities', [cf.financing.totalCents]);
  const change = r.total(
    'Net change in cash',
    [cf.netChangeInCashCents],
    [
      { row: operating, sign: 1 },
      { row: investing, sign: 1 },
      { row: financing, sign: 1 },
    ],
  );
  r.heading('Cash');
  const start = r.line(['Cash at the start of the period', cf.cashAtStartCents], 0);
  r.total(
    'Cash at the end of the period',
    [cf.cashAtEndCents],
    [
      { row: start, sign: 1 },
      { row: change, sign: 1 },
    ],
  );
  return {
    title: `${company}: Cash flows`,
    subtitle: `${cf.startDate} to ${cf.endDate}`,
    columns: [ACCOUNT, money('Amount')],
    rows: r.rows,
  };
}

export function agingStatement(report: AgingReport, company: string): Statement {
  const r = new Rows(7);
  r.heading(report.side === 'receivable' ? 'Customers' : 'Vendors');
  for (const c of report.contacts)
    r.line([
      c.contactName,
      c.currentCents,
      c.days1To30Cents,
      c.days31To60Cents,
      c.days61To90Cents,
      c.over90Cents,
      c.totalCents,
    ]);
  const t = report.totals;
  r.subtotal('Total', [
    t.currentCents,
    t.days1To30Cents,
    t.days31To60Cents,
    t.days61To90Cents,
    t.over90Cents,
    t.totalCents,
  ]);
  return {
    title: `${company}: ${report.side === 'receivable' ? 'Accounts receivable' : 'Accounts payable'} aging`,
    subtitle: `As of ${report.asOf}`,
    columns: [
      { title: report.side === 'receivable' ? 'Customer' : 'Vendor', kind: 'text' },
      money('Current'),
      money('1-30'),
      money('31-60'),
      money('61-90'),
      money('Over 90'),
      money('Total'),
    ],
    rows: r.rows,
  };
}

/** Month by month, what the trend charts draw: income, expenses, net income and the cash at each month end. */
export function trendStatement(months: TrendMonth[], company: string): Statement {
  const r = new Rows(5);
  r.heading('Months');
  for (const m of months) r.line([m.month, m.incomeCents, m.expensesCents, m.netIncomeCents, m.cashAtEndCents]);
  return {
    title: `${company}: Twelve months`,
    subtitle: `${months[0]?.startDate ?? ''} to ${months.at(-1)?.endDate ?? ''}`,
    columns: [
      { title: 'Month', kind: 'text' },
      money('Income'),
      money('Expenses'),
      money('Net income'),
      money('Cash at month end'),
    ],
    rows: r.rows,
    charts: [profitChart(months), cashChart(months)],
  };
}

/**
 * The general ledger: per account, its opening balance, its lines and its closing balance. The lines are read from
 * the ledger as the statement is drawn; the accounts' line counts, known beforehand, give the kinds of its rows.
 */
export function generalLedgerStatement(gl: GeneralLedgerReader, company: string): Statement {
  const empty = [null, null, null, null, null];
  return {
    title: `${company}: General ledger`,
    subtitle: `${gl.startDate} to ${gl.endDate}`,
    columns: [
      { title: 'Description', kind: 'text' },
      { title: 'Date', kind: 'date' },
      { title: 'Entry', kind: 'text' },
      money('Debit'),
      money('Credit'),
      money('Balance'),
    ],
    rows: (async function* (): AsyncGenerator<Row> {
      for (const a of gl.accounts) {
        yield { kind: 'heading', cells: [label(a), ...empty], indent: 0 };
        yield { kind: 'line', cells: ['Opening balance', null, null, null, null, a.openingBalanceCents], indent: 1 };
        for await (const page of gl.pages(a)) {
          for (const l of page) {
            yield {
              kind: 'line',
              cells: [
                l.description ?? l.memo ?? '',
                l.date,
                l.entryId.slice(0, 8),
                l.debitCents,
                l.creditCents,
                l.runningBalanceCents,
              ],
              indent: 1,
            };
          }
        }
        yield {
          kind: 'subtotal',
          cells: ['Closing balance', null, null, null, null, a.closingBalanceCents],
          indent: 0,
        };
      }
    })(),
    *kinds() {
      for (const a of gl.accounts) {
        yield 'heading';
        yield 'line';
        for (let i = 0; i < a.lineCount; i++) yield 'line';
        yield 'subtotal';
      }
    },
  };
}
