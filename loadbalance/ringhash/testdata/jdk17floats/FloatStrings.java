import java.util.SplittableRandom;
// FloatStrings prints "<d|f> <hex bits> <Double|Float.toString>" for n random
// doubles (d) or floats (f), uniform over the bit patterns of the positive
// values in [lo, hi), from a seeded generator. Arguments: d|f n lo hi seed.
// See ../README.md.
public class FloatStrings {
  public static void main(String[] a) {
    String kind = a[0]; int n = Integer.parseInt(a[1]); double lo = Double.parseDouble(a[2]); double hi = Double.parseDouble(a[3]);
    SplittableRandom r = new SplittableRandom(Long.parseLong(a[4]));
    StringBuilder sb = new StringBuilder(1 << 16);
    java.io.PrintStream out = new java.io.PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false);
    if (kind.equals("d")) {
      long b0 = Double.doubleToRawLongBits(lo), b1 = Double.doubleToRawLongBits(hi);
      for (int i = 0; i < n; i++) { long b = r.nextLong(b0, b1); sb.append("d ").append(Long.toHexString(b)).append(' ').append(Double.toString(Double.longBitsToDouble(b))).append('\n'); if (sb.length() > 60000) { out.print(sb); sb.setLength(0);} }
    } else {
      int b0 = Float.floatToRawIntBits((float) lo), b1 = hi > Float.MAX_VALUE ? 0x7f800000 : Float.floatToRawIntBits((float) hi);
      for (int i = 0; i < n; i++) { int b = r.nextInt(b0, b1); sb.append("f ").append(Integer.toHexString(b)).append(' ').append(Float.toString(Float.intBitsToFloat(b))).append('\n'); if (sb.length() > 60000) { out.print(sb); sb.setLength(0);} }
    }
    out.print(sb); out.flush();
  }
}
