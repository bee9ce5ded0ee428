import { CHART_TEMPLATE_NAMES, COMPANY_NAME_MAX, TAX_ID_MAX } from '@firm/ledger';
import { Type } from 'typebox';
import { CompanyParams, DataOf, IsoDate, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

export const Organization = Type.Object(
  {
    id: Uuid(),
    name: Type.String({ description: 'Unique among the firm’s companies, archived ones included.' }),
    legalName: Type.Union([Type.String(), Type.Null()]),
    taxId: Type.Union([Type.String(), Type.Null()], {
      description: 'Tax identification number (EIN, VAT number...), as given.',
    }),
    currency: Type.String({
      description: 'ISO 4217 code of the books. It cannot change once the company has posted entries.',
    }),
    fiscalYearStartMonth: Type.Integer({ minimum: 1, maximum: 12 }),
    booksClosedThrough: Type.Union([IsoDate('Nothing can be posted or voided on or before this date.'), Type.Null()]),
    status: Type.Union([Type.Literal('active'), Type.Literal('archived')], {
      description:
        'An archived company keeps its books and reports, readable; every write to it is 409 COMPANY_ARCHIVED.',
    }),
    archivedAt: Type.Union([Timestamp(), Type.Null()]),
    createdAt: Timestamp(),
  },
  { title: 'Organization', description: 'A client company whose books the firm keeps (also called a company).' },
);

export const OrganizationList = PageOf(Organization);
export const OrganizationOne = DataOf(Organization);
export const OrganizationListQuery = Type.Object({
  ...ListQuery,
  status: Type.Optional(
    Type.Union([Type.Literal('active'), Type.Literal('archived'), Type.Literal('all')], {
      default: 'active',
      description: 'Which companies to list: the active ones (the default), the archived ones, or all.',
    }),
  ),
});

const Name = Type.String({ minLength: 1, maxLength: COMPANY_NAME_MAX, pattern: NON_BLANK_TEXT });
const LegalName = Type.Union([Type.String({ maxLength: COMPANY_NAME_MAX }), Type.Null()], {
  description: 'The registered name; blank or null for none.',
});
const TaxId = Type.Union([Type.String({ maxLength: TAX_ID_MAX }), Type.Null()], {
  description: 'Tax identification number (EIN, VAT number...), kept as given; blank or null for none.',
});
const Currency = Type.String({
  pattern: '^[A-Z]{3}$',
  description: 'An ISO 4217 currency code in capitals (USD, EUR, GBP...); an unknown code is 400 VALIDATION_ERROR.',
});
const FiscalYearStartMonth = Type.Integer({
  minimum: 1,
  maximum: 12,
  description: 'Month (1-12) the fiscal year starts in: where the balance sheet splits retained and current earnings.',
});

export const CreateCompanyBody = Type.Object(
  {
    name: Name,
    legalName: Type.Optional(LegalName),
    taxId: Type.Optional(TaxId),
    currency: Type.Optional({ ...Currency, default: 'USD' }),
    fiscalYearStartMonth: Type.Optional({ ...FiscalYearStartMonth, default: 1 }),
    chartTemplate: Type.Optional(
      Type.Enum(CHART_TEMPLATE_NAMES, {
        default: 'standard',
        description:
          'The chart of accounts the company starts with: `standard`, a small-business chart (bank, receivables, ' +
          'payables, card, sales tax, equity with retained earnings, income and common expenses); `empty`, none.',
      }),
    ),
  },
  { additionalProperties: false, title: 'CreateCompany' },
);

export const UpdateCompanyBody = Type.Object(
  {
    name: Type.Optional(Name),
    legalName: Type.Optional(LegalName),
    taxId: Type.Optional(TaxId),
    currency: Type.Optional(Currency),
    fiscalYearStartMonth: Type.Optional(FiscalYearStartMonth),
  },
  { additionalProperties: false, minProperties: 1, title: 'UpdateCompany' },
);

export { CompanyParams };
