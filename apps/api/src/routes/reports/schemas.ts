import { type TSchema, Type } from 'typebox';
import { IsoDate, Uuid } from '../../schemas';
import { AccountSubtypeSchema as AccountSubtype, AccountTypeSchema as AccountType } from '../accounts/schemas';
import { AgingReport } from '../aging/schemas';
import { ReconciliationStatusReport } from '../banking/schemas';

const Cents = (description?: string) => Type.Integer(description ? { description } : {});

export const ReportQuery = Type.Object({
  startDate: Type.Optional(
    IsoDate(
      'First day of the period. Defaults: the start of the fiscal year containing endDate (profit and loss, ' +
        'general ledger); the beginning of the books (trial balance). The balance sheet is a point in time and ' +
        'ignores it.',
    ),
  ),
  endDate: Type.Optional(IsoDate('Last day of the period (the as-of date of the balance sheet). Default: today, UTC.')),
});

export const GeneralLedgerQuery = Type.Object({
  ...ReportQuery.properties,
  accountId: Type.Optional(Uuid('Only this account (listed even when it has no activity).')),
});

const ReportAccount = {
  accountId: Uuid(),
  code: Type.String(),
  name: Type.String(),
  type: AccountType,
  subtype: AccountSubtype,
};

export const TrialBalance = Type.Object(
  {
    startDate: Type.Union([IsoDate(), Type.Null()], { description: 'Null: from the beginning of the books.' }),
    endDate: IsoDate(),
    rows: Type.Array(
      Type.Object({ ...ReportAccount, debitCents: Cents(), creditCents: Cents() }, { title: 'TrialBalanceRow' }),
    ),
    totalDebitCents: Cents(),
    totalCreditCents: Cents('Always equal to totalDebitCents.'),
  },
  { title: 'TrialBalance', description: 'Each account with posted activity in the period, as a debit or a credit.' },
);

const BalanceSection = Type.Object({
  accounts: Type.Array(Type.Object({ ...ReportAccount, balanceCents: Cents() })),
  totalCents: Cents(),
});

export const BalanceSheet = Type.Object(
  {
    asOf: IsoDate(),
    fiscalYearStart: IsoDate('First day of the fiscal year containing asOf.'),
    assets: BalanceSection,
    liabilities: BalanceSection,
    equity: Type.Object({
      accounts: BalanceSection.properties.accounts,
      retainedEarningsCents: Cents('Net income of every fiscal year before the current one.'),
      currentYearEarningsCents: Cents('Net income from fiscalYearStart through asOf.'),
      totalCents: Cents(),
    }),
    totalLiabilitiesAndEquityCents: Cents('Always equal to assets.totalCents.'),
  },
  {
    title: 'BalanceSheet',
    description: 'Balances in each account’s normal direction; income and expenses are rolled into equity.',
  },
);

const PnlSection = Type.Object({
  accounts: Type.Array(Type.Object({ ...ReportAccount, amountCents: Cents() })),
  totalCents: Cents(),
});

export const ProfitAndLoss = Type.Object(
  {
    startDate: IsoDate(),
    endDate: IsoDate(),
    income: PnlSection,
    costOfSales: PnlSection,
    grossProfitCents: Cents('income - costOfSales'),
    expenses: PnlSection,
    otherIncome: PnlSection,
    otherExpenses: PnlSection,
    netIncomeCents: Cents('grossProfit - expenses + otherIncome - otherExpenses'),
  },
  { title: 'ProfitAndLoss' },
);

export const GeneralLedger = Type.Object(
  {
    startDate: IsoDate(),
    endDate: IsoDate(),
    accounts: Type.Array(
      Type.Object(
        {
          ...ReportAccount,
          openingBalanceCents: Cents(),
          lines: Type.Array(
            Type.Object({
              entryId: Uuid(),
              lineId: Uuid(),
              lineNo: Type.Integer(),
              date: IsoDate(),
              memo: Type.Union([Type.String(), Type.Null()]),
              description: Type.Union([Type.String(), Type.Null()]),
              debitCents: Cents(),
              creditCents: Cents(),
              runningBalanceCents: Cents(),
            }),
          ),
          closingBalanceCents: Cents(),
        },
        { title: 'GeneralLedgerAccount' },
      ),
    ),
  },
  {
    title: 'GeneralLedger',
    description: 'Per account: opening balance, each posted line with a running balance, closing balance.',
  },
);

export const ReportOf = <T extends TSchema>(report: T) => Type.Object({ data: report });

const Period = Type.Object({ startDate: IsoDate(), endDate: IsoDate() });
const Nullable = <T extends ReturnType<typeof Type.Object>>(t: T) => Type.Union([t, Type.Null()]);
const Ratio = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

const CashFlowLine = Type.Object({
  accountId: Uuid(),
  code: Type.String(),
  name: Type.String(),
  type: Type.String(),
  subtype: Type.String(),
  amountCents: Type.Integer({ description: 'Cash effect of the change: positive when it brought cash in.' }),
});
const CashFlowSection = { lines: Type.Array(CashFlowLine), totalCents: Cents() };

export const CashFlow = Type.Object(
  {
    startDate: IsoDate(),
    endDate: IsoDate(),
    operating: Type.Object({ netIncomeCents: Cents(), ...CashFlowSection }),
    investing: Type.Object(CashFlowSection),
    financing: Type.Object(CashFlowSection),
    netChangeInCashCents: Cents(),
    cashAtStartCents: Cents(),
    cashAtEndCents: Cents(),
  },
  {
    title: 'CashFlowStatement',
    description:
      'Indirect method, from account subtypes: net income adjusted by the change of receivables, other current ' +
      'assets, payables, cards and other current liabilities (operating); of fixed and other assets (investing); of ' +
      'long-term liabilities and equity (financing). Cash is the bank accounts; the sections add up to its change.',
  },
);

const TrendMonth = Type.Object(
  {
    month: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}$', description: 'YYYY-MM' }),
    startDate: IsoDate(),
    endDate: IsoDate("The month's last day, or the packet's endDate in its last month."),
    incomeCents: Cents('Income and other income.'),
    expensesCents: Cents('Cost of sales, expenses and other expenses.'),
    netIncomeCents: Cents('incomeCents - expensesCents: the profit and loss of the month.'),
    cashAtEndCents: Cents("The bank accounts' balance at endDate."),
  },
  { title: 'TrendMonth' },
);

export const PacketQuery = Type.Object({
  startDate: Type.Optional(IsoDate('First day of the period. Default: the start of the fiscal year of endDate.')),
  endDate: Type.Optional(IsoDate('Last day of the period. Default: today, UTC.')),
  comparePriorPeriod: Type.Optional(
    Type.Boolean({ default: true, description: 'Add the period of the same length just before (default true).' }),
  ),
  comparePriorYear: Type.Optional(
    Type.Boolean({ default: true, description: 'Add the same period a year earlier (default true).' }),
  ),
});

export const FinancialPacket = Type.Object(
  {
    organization: Type.Object({ id: Uuid(), name: Type.String() }),
    period: Period,
    comparisons: Type.Object({ priorPeriod: Nullable(Period), priorYear: Nullable(Period) }),
    profitAndLoss: Type.Object({
      current: ProfitAndLoss,
      priorPeriod: Type.Union([ProfitAndLoss, Type.Null()]),
      priorYear: Type.Union([ProfitAndLoss, Type.Null()]),
    }),
    balanceSheet: Type.Object({
      current: BalanceSheet,
      priorPeriod: Type.Union([BalanceSheet, Type.Null()], { description: 'As of the day before startDate.' }),
      priorYear: Type.Union([BalanceSheet, Type.Null()], { description: 'As of endDate a year earlier.' }),
    }),
    cashFlow: CashFlow,
    trialBalance: Type.Union([TrialBalance], { description: 'From the beginning of the books through endDate.' }),
    arAging: Type.Union([AgingReport], { description: 'As of endDate.' }),
    apAging: Type.Union([AgingReport], { description: 'As of endDate.' }),
    bankReconciliation: Type.Union([ReconciliationStatusReport], { description: 'As of endDate.' }),
    ratios: Type.Object({
      currentRatio: Ratio('Current assets / current liabilities; null without current liabilities.'),
      quickRatio: Ratio('(Bank + receivables) / current liabilities.'),
      grossMarginPct: Ratio('Gross profit / income, in percent; null without income.'),
      netMarginPct: Ratio('Net income / (income + other income), in percent.'),
      debtToEquity: Ratio('Total liabilities / total equity; null when equity is zero.'),
      workingCapitalCents: Cents(),
    }),
    monthlyTrend: Type.Array(TrendMonth, {
      description: 'The twelve months ending with the one that holds endDate, as the PDF charts them.',
    }),
    generatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'FinancialPacket' },
);
