// A Java app that knows nothing of epbroker: it registers libepbroker_ep.so with
// ONNX Runtime's Java binding (one line), takes the EpbrokerTestEp devices the
// library brought, runs ONNX's test_matmul_2d node model on them with CPU
// fallback disabled and on the CPU EP, and prints what it saw:
//
//   java -cp onnxruntime.jar:CLASSES MetaEpApp LIBRARY MODEL
//   -> "ort VERSION", "devices N", "library_path PATH" (per device),
//      "maxdiff D" (when there were devices), "done"
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtEpDevice;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public final class MetaEpApp {
  private static final String EP = "EpbrokerTestEp";

  public static void main(String[] args) throws OrtException {
    String library = args[0];
    String model = args[1];
    OrtEnvironment env = OrtEnvironment.getEnvironment();
    System.out.println("ort " + env.getVersion());
    env.registerExecutionProviderLibrary("epbroker", library);
    List<OrtEpDevice> devices = new ArrayList<>();
    for (OrtEpDevice d : env.getEpDevices()) {
      if (d.getEpName().equals(EP)) {
        devices.add(d);
      }
    }
    System.out.println("devices " + devices.size());
    for (OrtEpDevice d : devices) {
      System.out.println("library_path " + d.getEpMetadata().get("library_path"));
    }
    if (!devices.isEmpty()) {
      float[] a = new float[12];
      float[] b = new float[12];
      for (int i = 0; i < 12; i++) {
        a[i] = (i % 5) * 0.25f - 0.5f;
        b[i] = (i % 7) * 0.125f - 0.375f;
      }
      OrtSession.SessionOptions onEp = new OrtSession.SessionOptions();
      onEp.addExecutionProvider(devices, Map.of());
      onEp.addConfigEntry("session.disable_cpu_ep_fallback", "1");
      try (OrtSession cpu = env.createSession(model, new OrtSession.SessionOptions());
          OrtSession ep = env.createSession(model, onEp)) {
        float[] want = run(env, cpu, a, b);
        float[] got = run(env, ep, a, b);
        double max = 0;
        for (int i = 0; i < want.length; i++) {
          max = Math.max(max, Math.abs((double) want[i] - got[i]));
        }
        System.out.println("maxdiff " + max);
      }
    }
    env.unregisterExecutionProviderLibrary("epbroker");
    System.out.println("done");
  }

  // test_matmul_2d: a[3,4] x b[4,3] -> [3,3], flattened.
  private static float[] run(OrtEnvironment env, OrtSession s, float[] a, float[] b)
      throws OrtException {
    try (OnnxTensor ta = OnnxTensor.createTensor(env, FloatBuffer.wrap(a), new long[] {3, 4});
        OnnxTensor tb = OnnxTensor.createTensor(env, FloatBuffer.wrap(b), new long[] {4, 3});
        OrtSession.Result r = s.run(Map.of("a", ta, "b", tb))) {
      float[][] out = (float[][]) r.get(0).getValue();
      float[] flat = new float[9];
      for (int i = 0; i < 3; i++) {
        System.arraycopy(out[i], 0, flat, 3 * i, 3);
      }
      return flat;
    }
  }
}
