/**
 * The assignment problem by the Hungarian method (Kuhn–Munkres with row/column potentials,
 * O(n²·m)), written for COMBO's compatibility matching: pair each retrieved passage with one
 * generated passage so that total compatibility is as large as possible.
 */

export interface Assignment {
  /** rowToCol[i] = the column matched to row i, or -1 when there are more rows than columns. */
  rowToCol: number[];
  /** Sum of the matched entries. */
  total: number;
}

function checkMatrix(matrix: number[][]): { rows: number; cols: number } {
  const rows = matrix.length;
  const cols = rows === 0 ? 0 : matrix[0].length;
  for (const [i, row] of matrix.entries()) {
    if (row.length !== cols) throw new Error(`assignment matrix is not rectangular: row ${i} has ${row.length} entries, row 0 has ${cols}`);
    for (const [j, x] of row.entries()) {
      if (!Number.isFinite(x)) throw new Error(`assignment matrix entry [${i}][${j}] is not a finite number (${x})`);
    }
  }
  return { rows, cols };
}

/** Minimum-cost assignment of every row to a distinct column; requires rows ≤ cols. */
function minCostRowsLeCols(cost: number[][], rows: number, cols: number): number[] {
  // 1-based arrays as in the textbook formulation; index 0 is a virtual column.
  const u = new Float64Array(rows + 1);
  const v = new Float64Array(cols + 1);
  const p = new Int32Array(cols + 1); // p[j] = row matched to column j (1-based), 0 = free
  const way = new Int32Array(cols + 1);
  for (let i = 1; i <= rows; i++) {
    p[0] = i;
    let j0 = 0;
    const minv = new Float64Array(cols + 1).fill(Infinity);
    const used = new Uint8Array(cols + 1);
    do {
      used[j0] = 1;
      const i0 = p[j0];
      let delta = Infinity;
      let j1 = 0;
      for (let j = 1; j <= cols; j++) {
        if (used[j]) continue;
        const cur = cost[i0 - 1][j - 1] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (let j = 0; j <= cols; j++) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] !== 0);
    // Flip the augmenting path.
    do {
      const j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 !== 0);
  }
  const rowToCol = new Array<number>(rows).fill(-1);
  for (let j = 1; j <= cols; j++) if (p[j] !== 0) rowToCol[p[j] - 1] = j - 1;
  return rowToCol;
}

/** Minimum-cost assignment; with more rows than columns, some rows stay unmatched (-1). */
export function minCostAssignment(cost: number[][]): Assignment {
  const { rows, cols } = checkMatrix(cost);
  if (rows === 0 || cols === 0) return { rowToCol: new Array(rows).fill(-1), total: 0 };
  let rowToCol: number[];
  if (rows <= cols) {
    rowToCol = minCostRowsLeCols(cost, rows, cols);
  } else {
    const transposed = Array.from({ length: cols }, (_, j) => cost.map((row) => row[j]));
    const colToRow = minCostRowsLeCols(transposed, cols, rows);
    rowToCol = new Array<number>(rows).fill(-1);
    colToRow.forEach((i, j) => {
      if (i >= 0) rowToCol[i] = j;
    });
  }
  const total = rowToCol.reduce((s, j, i) => (j >= 0 ? s + cost[i][j] : s), 0);
  return { rowToCol, total };
}

/** Maximum-weight assignment (COMBO: maximise total compatibility). */
export function maxWeightAssignment(weights: number[][]): Assignment {
  checkMatrix(weights);
  const { rowToCol } = minCostAssignment(weights.map((row) => row.map((x) => -x)));
  const total = rowToCol.reduce((s, j, i) => (j >= 0 ? s + weights[i][j] : s), 0);
  return { rowToCol, total };
}
