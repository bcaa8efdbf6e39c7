import { useStdout } from 'ink';
import { useEffect, useState } from 'react';

/** The size the inspector draws at. */
export interface TerminalSize {
  readonly columns: number;
  readonly rows: number;
}

/**
 * The terminal's size, following resizes; `fixed` sizes (for tests and
 * captures) win. A stream that is not a terminal counts as 80×24.
 */
export function useTerminalSize(fixedColumns?: number, fixedRows?: number): TerminalSize {
  const { stdout } = useStdout();
  const measure = (): TerminalSize => ({
    columns: fixedColumns ?? (stdout.columns || 80),
    rows: fixedRows ?? (stdout.rows || 24),
  });
  const [current, setSize] = useState(measure);
  useEffect(() => {
    const onResize = () => {
      const next = measure();
      setSize((size) => (size.columns === next.columns && size.rows === next.rows ? size : next));
    };
    onResize();
    stdout.on('resize', onResize);
    return () => {
      stdout.off('resize', onResize);
    };
  }, [stdout, fixedColumns, fixedRows]);
  return current;
}
