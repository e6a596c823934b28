// The canvas's CSS has one source: mxnb/widgets/static/canvas.css (the cell widgets use it too).
import "../../mxnb/widgets/static/canvas.css";
import "./base.css";
