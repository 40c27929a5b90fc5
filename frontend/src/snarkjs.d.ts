// snarkjs ships no type declarations; the one call the auditor's page makes.
declare module 'snarkjs' {
  export const groth16: {
    verify(
      verificationKey: unknown,
      publicSignals: string[],
      proof: unknown,
      logger?: unknown,
    ): Promise<boolean>
  }
}
