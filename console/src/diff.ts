// Parsing of the unified diffs of status.items[].diff (go-difflib: "--- live", "+++ planned",
// "@@ -a,b +c,d @@" hunks) into rows for an inline or a side-by-side view.

export type DiffLineKind = 'context' | 'add' | 'remove' | 'hunk' | 'file';

export type DiffLine = {
  kind: DiffLineKind;
  text: string;
  oldNumber?: number;
  newNumber?: number;
};

// SideBySideRow pairs a line of the live object (left) with one of the planned object
// (right); a change shows the removed and the added line on one row.
export type SideBySideRow =
  | { kind: 'hunk' | 'file'; text: string }
  | { kind: 'pair'; left?: DiffLine; right?: DiffLine };

const hunkHeader = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

// diffLineCount counts the lines of a diff without parsing it, to decide whether to show it
// collapsed.
export const diffLineCount = (diff: string): number => {
  if (!diff) {
    return 0;
  }
  let n = 1;
  for (let i = diff.indexOf('\n'); i >= 0 && i < diff.length - 1; i = diff.indexOf('\n', i + 1)) {
    n++;
  }
  return n;
};

export const parseUnifiedDiff = (diff: string): DiffLine[] => {
  const lines: DiffLine[] = [];
  let oldNo = 0;
  let newNo = 0;
  for (const raw of diff.replace(/\n$/, '').split('\n')) {
    if (raw.startsWith('--- ') || raw.startsWith('+++ ')) {
      lines.push({ kind: 'file', text: raw });
      continue;
    }
    const h = hunkHeader.exec(raw);
    if (h) {
      oldNo = Number(h[1]);
      newNo = Number(h[2]);
      lines.push({ kind: 'hunk', text: raw });
      continue;
    }
    if (raw.startsWith('+')) {
      lines.push({ kind: 'add', text: raw.slice(1), newNumber: newNo++ });
    } else if (raw.startsWith('-')) {
      lines.push({ kind: 'remove', text: raw.slice(1), oldNumber: oldNo++ });
    } else if (raw.startsWith('\\')) {
      // "\ No newline at end of file" belongs to the line before it.
      continue;
    } else {
      lines.push({
        kind: 'context',
        text: raw.startsWith(' ') ? raw.slice(1) : raw,
        oldNumber: oldNo++,
        newNumber: newNo++,
      });
    }
  }
  return lines;
};

// sideBySide pairs each run of removed lines with the run of added lines that follows it.
export const sideBySide = (lines: DiffLine[]): SideBySideRow[] => {
  const rows: SideBySideRow[] = [];
  let removed: DiffLine[] = [];
  let added: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(removed.length, added.length); i++) {
      rows.push({ kind: 'pair', left: removed[i], right: added[i] });
    }
    removed = [];
    added = [];
  };
  for (const line of lines) {
    switch (line.kind) {
      case 'remove':
        if (added.length > 0) {
          flush();
        }
        removed.push(line);
        break;
      case 'add':
        added.push(line);
        break;
      case 'context':
        flush();
        rows.push({ kind: 'pair', left: line, right: line });
        break;
      default:
        flush();
        rows.push({ kind: line.kind, text: line.text });
    }
  }
  flush();
  return rows;
};

// conflictKeys are the YAML keys of the fields a conflict names ("spec.profiles" →
// "profiles"), to mark the changed diff lines that set them.
export const conflictKeys = (paths: string[]): string[] =>
  paths
    .map((p) => p.split('.').pop() ?? '')
    .map((k) => k.replace(/\[.*\]$/, ''))
    .filter((k) => k !== '');

// marksConflict tells whether a changed line sets one of the conflicting keys.
export const marksConflict = (line: DiffLine | undefined, keys: string[]): boolean => {
  if (!line || (line.kind !== 'add' && line.kind !== 'remove') || keys.length === 0) {
    return false;
  }
  const text = line.text.trim().replace(/^- /, '');
  return keys.some((k) => text.startsWith(`${k}:`) || text.startsWith(`"${k}":`));
};
