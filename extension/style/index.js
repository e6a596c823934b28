// The canvas's CSS has one source: mxnb/widgets/static/canvas.css (the cell widgets use it too).
import "../../mxnb/widgets/static/canvas.css"; // listed in package.json sideEffects, or webpack drops it
import "./base.css";
