import { Type } from 'typebox';
import { DataOf } from '../../schemas';

export const CloseRuleParams = Type.Object({
  kind: Type.String({ maxLength: 100, description: 'The rule, e.g. `expense_spike`.' }),
});

const Threshold = Type.Object(
  {
    name: Type.String(),
    value: Type.Integer({ description: "The firm's value, or the default when the firm set none." }),
    default: Type.Integer(),
    min: Type.Integer({ description: 'The smallest value accepted.' }),
    description: Type.String(),
  },
  { title: 'CloseRuleThreshold' },
);

export const CloseRule = Type.Object(
  {
    kind: Type.String(),
    severity: Type.Enum(['blocking', 'advisory'], {
      description: 'blocking: a close cannot finish while such an item is open (not signed off); advisory: it can.',
    }),
    title: Type.String(),
    description: Type.String({ description: 'What the rule finds, how, and why it has its severity.' }),
    enabled: Type.Boolean({ description: 'Always true for a blocking rule.' }),
    thresholds: Type.Array(Threshold),
  },
  { title: 'CloseRule' },
);

export const CloseRuleList = Type.Object({ data: Type.Array(CloseRule) });
export const CloseRuleOne = DataOf(CloseRule);

export const CloseRulePatch = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'false turns an advisory rule off for the firm; a blocking rule cannot be.' }),
    ),
    thresholds: Type.Optional(
      Type.Record(Type.String({ maxLength: 100 }), Type.Union([Type.Number(), Type.Null()]), {
        description:
          "Thresholds to set, by name (whole numbers, at least the threshold's min); null sets one back to its " +
          'default. Thresholds not named keep their value.',
      }),
    ),
  },
  { additionalProperties: false, title: 'CloseRulePatch' },
);
