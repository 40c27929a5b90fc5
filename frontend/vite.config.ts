// The pages are served by the API under /embed (docs/FRONTEND.md): hashed
// assets under /embed/assets with a year's caching, the HTML per request.
import { defineConfig } from 'vite'

export default defineConfig({
  base: '/embed/',
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    // No inline scripts or styles: the page's CSP allows 'self' only.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    // The auditor's page carries snarkjs and viem (about 140 kB gzipped).
    chunkSizeWarningLimit: 1024,
    rollupOptions: {
      input: { embed: 'index.html', audit: 'audit.html', console: 'console.html' },
    },
  },
})
