// Stylesheets the app imports for their side effect (Pico CSS, styles.css): esbuild bundles them into app.css.
declare module '*.css';
