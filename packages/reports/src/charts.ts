import type { TrendMonth } from '@firm/ledger';
import type { Config, TopLevelSpec } from 'vega-lite';

/**
 * Charts are Vega-Lite specifications, drawn to SVG by Vega in Node (no browser, no canvas: text is measured by
 * Vega's estimate, so a chart is the same on every machine) and from SVG into the PDF by svg-to-pdfkit as vector
 * paths and text. Vega is loaded on the first chart, as pdfkit is on the first export.
 */
export type Chart = TopLevelSpec;

/** Chart size in SVG pixels; the PDF scales it to the page's width. */
export const CHART_SIZE = { width: 560, height: 300 };

const SERIES = ['Income', 'Expenses', 'Net income'];
const SERIES_COLOURS = ['#2e7d32', '#c62828', '#1565c0'];
const MONTH_NAMES = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "2026-06" as "Jun 26": twelve of them fit under a chart without turning. */
const monthLabel = (month: string) => `${MONTH_NAMES[Number(month.slice(5, 7)) - 1]} ${month.slice(2, 4)}`;

/** Axis labels are whole currency units with thousands separators; the figures themselves are in cents. */
const MONEY_AXIS = { title: 'Amount', format: ',.0f' };

const CONFIG: Config = {
  // d3's default minus is U+2212, which the standard fonts' encoding lacks: the sign would vanish from the PDF.
  locale: { number: { decimal: '.', thousands: ',', grouping: [3], currency: ['', ''], minus: '-' } },
  font: 'Helvetica',
  title: { fontSize: 13, anchor: 'start' },
  axis: { labelFontSize: 9, titleFontSize: 10 },
  legend: { labelFontSize: 9, orient: 'top' },
};

const BASE = {
  ...CHART_SIZE,
  autosize: { type: 'fit', contains: 'padding' },
  background: 'white',
  config: CONFIG,
} as const;

/** Income, expenses and net income of each month, side by side. */
export function profitChart(months: TrendMonth[]): Chart {
  return {
    ...BASE,
    title: 'Income, expenses and net income by month',
    data: {
      values: months.flatMap((m) =>
        [m.incomeCents, m.expensesCents, m.netIncomeCents].map((cents, i) => ({
          month: monthLabel(m.month),
          series: SERIES[i],
          amount: cents / 100,
        })),
      ),
    },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'month', type: 'ordinal', sort: null, title: 'Month', axis: { labelAngle: 0 } },
      xOffset: { field: 'series', sort: SERIES },
      y: { field: 'amount', type: 'quantitative', axis: MONEY_AXIS },
      color: {
        field: 'series',
        sort: SERIES,
        scale: { domain: SERIES, range: SERIES_COLOURS },
        legend: { title: null },
      },
    },
  };
}

/** The bank accounts' balance at each month end. */
export function cashChart(months: TrendMonth[]): Chart {
  return {
    ...BASE,
    title: 'Cash balance at month end',
    data: {
      values: months.map((m) => ({ month: monthLabel(m.month), series: 'Cash', amount: m.cashAtEndCents / 100 })),
    },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'month', type: 'ordinal', sort: null, title: 'Month', axis: { labelAngle: 0 } },
      y: { field: 'amount', type: 'quantitative', axis: MONEY_AXIS },
      color: { field: 'series', scale: { range: ['#00838f'] }, legend: { title: null } },
    },
  };
}

/** The chart as an SVG document. */
export async function chartSvg(chart: Chart): Promise<string> {
  const [vega, vegaLite] = await Promise.all([import('vega'), import('vega-lite')]);
  const view = new vega.View(vega.parse(vegaLite.compile(chart).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
