import * as React from 'react';
import { Button, Flex, FlexItem, Label } from '@patternfly/react-core';
import { usePluginTranslation } from '../i18n';
import {
  diffLineCount,
  marksConflict,
  parseUnifiedDiff,
  sideBySide,
  type DiffLine,
  type SideBySideRow,
} from '../diff';

export type DiffMode = 'split' | 'unified';

// Diffs longer than this are collapsed until asked for; once shown, rows are rendered a
// page at a time, so that a plan with large MachineConfigs stays responsive.
export const collapseAboveLines = 60;
export const rowsPerPage = 400;

type DiffViewProps = {
  diff: string;
  mode: DiffMode;
  // conflictKeys are the YAML keys of fields another manager owns: their changed lines are
  // marked.
  conflictKeys?: string[];
  // label names the diff for assistive technology, e.g. "Diff of item swap".
  label: string;
  // collapsed, when set, overrides the default (collapsed when longer than collapseAboveLines).
  collapsed?: boolean;
};

const lineClass = (line?: DiffLine, conflict?: boolean): string => {
  const classes: string[] = [];
  if (line?.kind === 'add') {
    classes.push('virt-advisor-plugin__diff-add');
  } else if (line?.kind === 'remove') {
    classes.push('virt-advisor-plugin__diff-remove');
  }
  if (conflict) {
    classes.push('virt-advisor-plugin__diff-conflict');
  }
  return classes.join(' ');
};

const sign = (line?: DiffLine) => (line?.kind === 'add' ? '+' : line?.kind === 'remove' ? '-' : '');

const ConflictMark: React.FC<{ show: boolean }> = ({ show }) => {
  const { t } = usePluginTranslation();
  return show ? <span className="virt-advisor-plugin__sr-only">{t('conflict')}</span> : null;
};

const UnifiedRows: React.FC<{ lines: DiffLine[]; keys: string[] }> = ({ lines, keys }) => (
  <>
    {lines.map((line, i) => {
      if (line.kind === 'hunk' || line.kind === 'file') {
        return (
          <tr key={i} className={`virt-advisor-plugin__diff-${line.kind}`}>
            <td colSpan={4}>{line.text}</td>
          </tr>
        );
      }
      const conflict = marksConflict(line, keys);
      return (
        <tr key={i} className={lineClass(line, conflict)} data-conflict={conflict || undefined}>
          <td className="virt-advisor-plugin__diff-number">{line.oldNumber ?? ''}</td>
          <td className="virt-advisor-plugin__diff-number">{line.newNumber ?? ''}</td>
          <td className="virt-advisor-plugin__diff-sign">{sign(line)}</td>
          <td>
            <ConflictMark show={conflict} />
            {line.text}
          </td>
        </tr>
      );
    })}
  </>
);

const SplitRows: React.FC<{ rows: SideBySideRow[]; keys: string[] }> = ({ rows, keys }) => (
  <>
    {rows.map((row, i) => {
      if (row.kind !== 'pair') {
        return (
          <tr key={i} className={`virt-advisor-plugin__diff-${row.kind}`}>
            <td colSpan={4}>{row.text}</td>
          </tr>
        );
      }
      const leftConflict = marksConflict(row.left, keys);
      const rightConflict = marksConflict(row.right, keys);
      return (
        <tr key={i} data-conflict={leftConflict || rightConflict || undefined}>
          <td className="virt-advisor-plugin__diff-number">{row.left?.oldNumber ?? ''}</td>
          <td className={lineClass(row.left?.kind === 'context' ? undefined : row.left, leftConflict)}>
            <ConflictMark show={leftConflict} />
            {row.left ? `${sign(row.left)}${row.left.kind === 'context' ? '' : ' '}${row.left.text}` : ''}
          </td>
          <td className="virt-advisor-plugin__diff-number">{row.right?.newNumber ?? ''}</td>
          <td className={lineClass(row.right?.kind === 'context' ? undefined : row.right, rightConflict)}>
            <ConflictMark show={rightConflict} />
            {row.right ? `${sign(row.right)}${row.right.kind === 'context' ? '' : ' '}${row.right.text}` : ''}
          </td>
        </tr>
      );
    })}
  </>
);

// DiffRows parses and renders a diff: mounted only once the diff is shown.
const DiffRows: React.FC<{ diff: string; mode: DiffMode; keys: string[]; label: string }> = ({
  diff,
  mode,
  keys,
  label,
}) => {
  const { t } = usePluginTranslation();
  const lines = React.useMemo(() => parseUnifiedDiff(diff), [diff]);
  // A diff that creates its object has no live side: it is shown inline in either layout.
  const creation = React.useMemo(() => lines.every((l) => l.kind !== 'remove' && l.kind !== 'context'), [lines]);
  const rows = React.useMemo(
    () => (mode === 'split' && !creation ? sideBySide(lines) : undefined),
    [lines, mode, creation],
  );
  const total = rows ? rows.length : lines.length;
  const [shown, setShown] = React.useState(rowsPerPage);
  return (
    <>
      <div className="virt-advisor-plugin__diff-scroll" tabIndex={0} role="region" aria-label={label}>
        <table className="virt-advisor-plugin__diff" data-mode={mode}>
          <caption className="virt-advisor-plugin__sr-only">{label}</caption>
          {/* A fixed table layout takes the columns' widths from here: the first rows may span them all. */}
          {rows ? (
            <colgroup>
              <col className="virt-advisor-plugin__diff-number-col" />
              <col />
              <col className="virt-advisor-plugin__diff-number-col" />
              <col />
            </colgroup>
          ) : (
            <colgroup>
              <col className="virt-advisor-plugin__diff-number-col" />
              <col className="virt-advisor-plugin__diff-number-col" />
              <col className="virt-advisor-plugin__diff-sign-col" />
              <col />
            </colgroup>
          )}
          <thead className="virt-advisor-plugin__sr-only">
            {rows ? (
              <tr>
                <th scope="col">{t('Live line')}</th>
                <th scope="col">{t('Live object')}</th>
                <th scope="col">{t('Planned line')}</th>
                <th scope="col">{t('Planned object')}</th>
              </tr>
            ) : (
              <tr>
                <th scope="col">{t('Live line')}</th>
                <th scope="col">{t('Planned line')}</th>
                <th scope="col">{t('Change')}</th>
                <th scope="col">{t('Text')}</th>
              </tr>
            )}
          </thead>
          <tbody>
            {rows ? (
              <SplitRows rows={rows.slice(0, shown)} keys={keys} />
            ) : (
              <UnifiedRows lines={lines.slice(0, shown)} keys={keys} />
            )}
          </tbody>
        </table>
      </div>
      {total > shown && (
        <Button variant="link" isInline onClick={() => setShown(total)}>
          {t('Show the remaining {{count}} lines', { count: total - shown })}
        </Button>
      )}
    </>
  );
};

export const DiffView: React.FC<DiffViewProps> = ({ diff, mode, conflictKeys = [], label, collapsed }) => {
  const { t } = usePluginTranslation();
  const lineCount = React.useMemo(() => diffLineCount(diff), [diff]);
  const [open, setOpen] = React.useState(collapsed === undefined ? lineCount <= collapseAboveLines : !collapsed);
  return (
    <div data-test="diff" data-open={open}>
      <Flex spaceItems={{ default: 'spaceItemsSm' }} alignItems={{ default: 'alignItemsCenter' }}>
        <FlexItem>
          <Button variant="link" isInline onClick={() => setOpen(!open)} aria-expanded={open}>
            {open ? t('Hide the diff') : t('Show the diff ({{count}} lines)', { count: lineCount })}
          </Button>
        </FlexItem>
        {conflictKeys.length > 0 && (
          <FlexItem>
            <Label color="orange" isCompact>
              {t('Lines with a conflict are marked')}
            </Label>
          </FlexItem>
        )}
      </Flex>
      {open && <DiffRows diff={diff} mode={mode} keys={conflictKeys} label={label} />}
    </div>
  );
};
