// The part of jStat 1.9's API the benchmark's statistics use (the package ships no types).
declare module 'jstat' {
  interface JStat {
    mean(xs: number[]): number;
    /** `sample` true: the n − 1 standard deviation. */
    stdev(xs: number[], sample?: boolean): number;
    studentt: { cdf(x: number, dof: number): number; inv(p: number, dof: number): number };
  }
  const jStat: JStat;
  export default jStat;
}
